"""The Hydra task: compose -> validate -> run (measure or predict) -> record -> return samples/s.

The run goes through :func:`dabench.api.record_run`: the MLflow run is opened before the work and
closed on every exit path (dabench/tracking/lifecycle.py).

A single run with bad input exits with status 2 before any work and records nothing; inside a
``-m`` multirun, the same input is recorded as an ``invalid_config`` run and the sweep goes on.
A single run that ends in any status other than ok is recorded and exits with status 1.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from dabench.api import placed, record_run
from dabench.config import build_run_config
from dabench.runner import RunResult
from dabench.status import ConfigError, is_ok
from dabench.tune.outcome import job_outcome
from dabench.tracking.describe import hydra_overrides, reproduce_command, run_note, summary_line
from dabench.tracking.naming import run_name, run_tags

log = logging.getLogger("dabench")


def _is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


_run_name, _tags = run_name, run_tags  # the names this module had before they moved to tracking/naming.py


_summary = summary_line  # the one-line summary lives in tracking/describe.py (also the run's MLflow description)


def run_job(cfg: DictConfig) -> float:
    """The task function: returns samples/s for an ok run, NaN otherwise."""
    from dabench.tracking.redact import install_log_redaction, redact_hydra_output, redact_text

    install_log_redaction()  # log lines, and Hydra's .hydra/*.yaml, carry no credentials or tokens
    redact_hydra_output(Path.cwd() / ".hydra")
    container = placed(OmegaConf.to_container(cfg, resolve=True))
    name = (container.get("tracking") or {}).get("run_name") or run_name(container)
    multirun = _is_multirun()
    rc = None
    try:
        rc = build_run_config(container)
    except ConfigError as error:
        if not multirun:
            print(f"dabench: {error}", file=sys.stderr)
            raise SystemExit(2)
        log.error("%s", error)  # recorded below as an invalid_config run; the sweep goes on
    if rc is not None:
        from dabench.tracking.preflight import refuse_if_unfit

        refuse_if_unfit(rc, multirun)  # store, disk, memory, ranks: one line each, exit 2 (docs/reliability.md)
        log.info("running %s (hardware.mode=%s)", name, rc.hardware.mode)
    command = reproduce_command(hydra_overrides() or [])
    result, run_id = record_run(container, rc=rc, artifacts_dir=Path.cwd() / "artifacts", name=name,
                                note=lambda r: run_note(_summary(r, name), command))
    if run_id:
        log.info("MLflow run %s", run_id)
    print(redact_text(_summary(result, name)), flush=True)
    if not result.ok and not multirun:
        raise SystemExit(1)
    return job_outcome(result)  # a float that also carries status, reason, mode (Hydra's JobReturn)
