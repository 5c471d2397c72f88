"""The Hydra task: ``dabench [overrides] [-m]`` composes conf/, validates, runs (measure or
predict), records, and returns samples/s to Hydra (and its sweeper). A single run with bad input
exits 2 before any work (inside ``-m``: recorded ``invalid_config``, the sweep goes on); one that
ends other than ok is recorded and exits 1.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Iterator

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from dabench.config.compose import as_config_error, composition_error
from dabench.config.paths import CONF_DIR
from dabench.config.schema import flags_last, refuse_bad_command_line
from dabench.core.status import ConfigError
from dabench.pipeline.job import Job, prepare
from dabench.pipeline.preflight import command_line_dirs, refuse, refuse_if_unfit
from dabench.pipeline.record import record_run
from dabench.runtime.interrupts import guard
from dabench.tracking.describe import hydra_overrides, reproduce_command, run_note, summary_line
from dabench.tracking.redact import install_log_redaction, redact_hydra_output, redact_text
from dabench.tune.outcome import job_outcome

log = logging.getLogger("dabench")


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def run_job(cfg: DictConfig) -> float:
    """The Hydra task function: returns samples/s for an ok run, NaN otherwise."""
    install_log_redaction()  # log lines, and Hydra's .hydra/*.yaml, carry no credentials or tokens
    redact_hydra_output(Path.cwd() / ".hydra")
    try:
        with as_config_error():  # a broken interpolation: this job's invalid_config
            job = prepare(OmegaConf.to_container(cfg, resolve=True))
    except ConfigError as error:
        job = Job(OmegaConf.to_container(cfg, resolve=False), None, error)
    name = job.name
    multirun = HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    if job.error is not None:
        if not multirun:
            print(f"dabench: {redact_text(str(job.error))}", file=sys.stderr)
            raise SystemExit(2)
        log.error("%s", job.error)  # recorded below as an invalid_config run; the sweep goes on
    else:
        refuse_if_unfit(job.rc, multirun, job.unfit)  # store, disk, memory, ranks: one line each, exit 2
        log.info("running %s (hardware.mode=%s)", name, job.rc.hardware.mode)
    command = reproduce_command(hydra_overrides() or [])  # once, not per note
    result, run_id = record_run(
        job, artifacts_dir=Path.cwd() / "artifacts", name=name, note=lambda r: run_note(summary_line(r, name), command)
    )
    if run_id:
        log.info("MLflow run %s", run_id)
    print(redact_text(summary_line(result, name)), flush=True)
    if not result.ok and not multirun:
        raise SystemExit(1)
    return job_outcome(result)  # a float that also carries status, reason, mode (Hydra's JobReturn)


def main(argv: list[str]) -> int:
    """``dabench [overrides] [-m]`` under :func:`dabench.runtime.interrupts.guard`: Ctrl-C or SIGTERM
    ends it with one line and exit status 130 / 143, every open run closed (docs/reliability.md)."""
    sys.argv = [sys.argv[0], *argv]  # Hydra reads its command line from sys.argv (-v taken off by cli/main.py)

    refuse_bad_command_line()  # unknown flags, group options and keys: one line, exit 2, before Hydra
    sys.argv[1:] = flags_last(argv)  # dabench a=1 -m b=2 runs as dabench a=1 b=2 -m
    refuse(command_line_dirs(sys.argv[1:]))  # a run or sweep folder Hydra could not create: one line, exit 2
    with guard(), _mode_from_flags(argv), _hydra_raises() as traceback_asked:
        try:
            run_job()
        except Exception as error:
            if traceback_asked:
                raise
            from dabench.cli.frame import failure

            error = composition_error(error) or error  # what Hydra refuses while composing (a user's sweep file)
            bad = isinstance(error, ConfigError)
            print(f"dabench: {'invalid config: ' if bad else ''}{failure(error)}", file=sys.stderr)
            return 2 if bad else 1
    return 0


@contextlib.contextmanager
def _hydra_raises() -> Iterator[bool]:
    """Hydra raises what ends its run (its ``HYDRA_FULL_ERROR``) rather than printing it, for
    :func:`main` to say in one line; yields whether the user set that variable (then: the traceback)."""
    before = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield before == "1"
    finally:
        if before is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = before


@contextlib.contextmanager
def _mode_from_flags(argv: list[str]) -> Iterator[None]:
    """Skip Hydra's extra composition that only reads ``hydra.mode`` (``Hydra.get_mode``, a whole
    compose before the run's own) where the command line alone decides the mode: ``-m`` makes it a
    multirun whatever the config says, and without ``-m`` only a ``hydra.mode`` override, a sweep file
    or another config source could make it one (dabench's conf/ sets no ``hydra.mode``:
    tests/cli/test_run_mode.py). Hydra then takes RUN or MULTIRUN from ``-m``, as it does when
    ``get_mode`` finds nothing."""
    from hydra._internal.hydra import Hydra

    others = ("hydra.mode", "sweeps", "-c", "--config")
    decided = any(a in ("-m", "--multirun") for a in argv) or not any(a.lstrip("+~").startswith(others) for a in argv)
    if not decided or not hasattr(Hydra, "get_mode"):
        yield
        return
    found = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: None
    try:
        yield
    finally:
        Hydra.get_mode = found
