"""The Python entry for a run: ``predict(overrides)`` and ``run(overrides)`` -> :class:`Result`.

    >>> from dabench import predict
    >>> r = predict(["hardware=ipu", "model=gpt2_small", "parallel=pp"])
    >>> r.status, r.metrics["throughput.samples_per_s"]

Overrides are Hydra's command-line overrides (the same strings ``python -m dabench`` takes);
they are composed with Hydra's compose API against the repository's conf/ (the composition
machinery is initialised once per process and reused). A composed config then goes through the
one pipeline (:func:`dabench.runner.execute`), the same the Hydra task (dabench/app.py) uses.

- :func:`predict` forces ``hardware.mode=predict``: no device, no torch import.
- :func:`run` honours ``hardware.mode`` (measure, validate, auto or predict; the default config
  says auto). ``record=True`` records the run in MLflow through the same run lifecycle as the
  Hydra task (:func:`dabench.tracking.lifecycle.recorded_run`).

Neither raises for a failed run: bad input comes back as status ``invalid_config``, a workload
that does not fit as ``capacity``, and so on (dabench/status.py).
"""

from __future__ import annotations

import logging
import tempfile
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dabench.config import RunConfig, apply_placement, build_run_config, flatten
from dabench.runner import RunResult, execute
from dabench.status import ConfigError, Status

log = logging.getLogger("dabench")

#: the repository's conf/ folder
CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")

#: a run's typed result: status, reason, mode, metrics, the resolved config (``config``, and the
#: validated ``run_config``), diagnosis, profile / predicted profile, notes
Result = RunResult

_lock = threading.Lock()
_hydra = None  #: our Hydra object (config search path on conf/), built once per process


def compose(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config (a plain dict, without the ``hydra`` node) for ``overrides``.

    Hydra's composition machinery for conf/ is built on first use and kept; each call installs it
    in GlobalHydra, composes and leaves GlobalHydra as it found it (a Hydra app or a test's own
    ``initialize_config_dir`` is not disturbed)."""
    global _hydra
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    with _lock:
        gh = GlobalHydra.instance()
        previous = gh.hydra if gh.is_initialized() else None
        gh.clear()
        try:
            if _hydra is None:
                initialize_config_dir(config_dir=CONF_DIR, version_base=None, job_name="dabench")
                _hydra = gh.hydra
            else:
                gh.initialize(_hydra)
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
        finally:
            gh.clear()
            if previous is not None:
                gh.initialize(previous)
    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("hydra", None)
    return container


def placed(container: Mapping[str, Any]) -> dict[str, Any]:
    """``container`` with its pp placement applied (what runs is what is named and logged); a
    bad placement is left for :func:`build_run_config` to refuse with its message."""
    try:
        return apply_placement(container)
    except ConfigError:
        return dict(container)


def run_container(container: Mapping[str, Any], rc: RunConfig | None = None) -> RunResult:
    """One composed config (a plain mapping; ``rc`` when already validated) through the pipeline.
    Bad input becomes an ``invalid_config`` result (reason names field, value and what is valid);
    ``result.config`` holds the placement-applied mapping that ran (or was refused)."""
    container = placed(container)
    if rc is None:
        try:
            rc = build_run_config(container)
        except ConfigError as error:
            return RunResult(Status.INVALID_CONFIG, str(error), "none", config=container)
    from dabench.tracking.preflight import job_problems  # memory and ranks of a measured CPU run

    unfit = job_problems(rc)
    if unfit:
        return RunResult(Status.INVALID_CONFIG, str(unfit[0]), "none", config=container)
    result = execute(rc)
    result.config = container
    return result


def record_run(container: Mapping[str, Any], *, rc: RunConfig | None = None, artifacts_dir: Path | None = None,
               name: str | None = None, note: Callable[[RunResult], str] | None = None) -> tuple[RunResult, str | None]:
    """(result, MLflow run id or None): the MLflow run is opened before the work and closed after
    it on every exit path (:func:`dabench.tracking.lifecycle.recorded_run`); params are the
    flattened config, metrics the result's, tags :func:`dabench.tracking.naming.run_tags`;
    artifacts (config, result JSON, plots) are written to ``artifacts_dir`` and logged. With
    ``tracking.enabled=false`` nothing is recorded."""
    from dabench.tracking.naming import run_name, run_tags

    container = placed(container)
    tracking = container.get("tracking") or {}
    name = name or tracking.get("run_name") or run_name(container)
    record = tracking.get("enabled", True)
    opened = nullcontext(None)
    if record:
        from dabench.tracking.lifecycle import recorded_run

        opened = recorded_run(experiment=tracking.get("experiment") or "dabench", uri=tracking.get("uri"),
                              run_name=name, status_tags=False, parent_id=tracking.get("parent_run_id") or None)
    with opened as run:
        from dabench import faults

        faults.check("run_body")  # tests: hold here until signalled (dabench/faults.py)
        from dabench.tracking.system_metrics import system_metrics

        if rc is None:  # validated once, here: the sampler needs to know whether the run is measured
            try:
                rc = build_run_config(container)
            except ConfigError:
                rc = None  # run_container turns it into the invalid_config result
        with system_metrics(run, rc):  # measured runs: MLflow's system-metrics sampler while the work runs
            result = run_container(container, rc)
        try:
            artifacts = _write_artifacts(artifacts_dir, container, result, name)
        except OSError as error:  # a full disk or a read-only folder: the record is not complete
            artifacts = None
            _not_written(result, error, f"artifacts not written to {artifacts_dir}")
        if run is not None:
            from dabench.tracking.lifecycle import write_error_status

            tags = run_tags(result.run_config, result, container)
            if result.run_config is None:
                tags["dabench.mode"] = "none"
            if note is not None:  # the run's description: summary line and reproduce command
                tags["mlflow.note.content"] = note(result)
            try:
                run.log(params=flatten(container), metrics=result.metrics, tags=tags)
                run.log_artifacts(artifacts)
            except Exception as error:  # the store became unreachable, or its disk is full
                _not_written(result, error, "the run store could not record the run", write_error_status(error))
                run.status_tags = True  # the tags above were not written: closing writes the status
            run.set_status(result.status, result.reason)
    if run is not None and run.extra.get("close_error"):  # the store failed at the very end
        _not_written(result, RuntimeError(run.extra["close_error"]), "the run could not be closed in the store")
    return result, (run.run_id if run is not None else None)


def _not_written(result: RunResult, error: BaseException, what: str, status: Status | None = None) -> None:
    """``ok`` means every metric and artifact was written: a write failure replaces the status
    (``disk_full`` for ENOSPC/EDQUOT, else ``tracking_error``), keeping an earlier failure's
    reason after the write error."""
    from dabench.tracking.lifecycle import write_error_status

    before = "" if result.status is Status.OK else f" (the run itself: {result.status.value}: {result.reason})"
    result.status = status or write_error_status(error)
    result.reason = f"{what}: {type(error).__name__}: {error}{before}"
    log.error("%s", result.reason)


def _write_artifacts(folder: Path | None, container: Mapping[str, Any], result: RunResult, name: str) -> Path | None:
    """Write the run's artifacts into ``folder``. An OSError (full disk, read-only folder) is
    raised: the run is then not ok. Any other error (a plot that cannot be drawn) is a warning."""
    if folder is None:
        return None
    from dabench import faults

    faults.check("artifacts", folder)
    try:
        from dabench.report.artifacts import write_artifacts

        copies = result.run_config.data_copies if result.run_config is not None else 1
        return write_artifacts(folder, container, result, name, copies)
    except OSError:
        raise
    except Exception as error:  # a broken plot must not lose the run
        log.warning("could not write artifacts: %s", error)
        return None


def predict(overrides: Sequence[str] = ()) -> RunResult:
    """Predict with the analytical model of the selected hardware (``hardware.mode=predict``)."""
    try:
        container = compose([*overrides, "hardware.mode=predict"])
    except Exception as error:  # an unknown group option or key: bad input, a result
        return RunResult(Status.INVALID_CONFIG, f"invalid overrides {list(overrides)}: {error}", "none")
    return run_container(container)


def run(overrides: Sequence[str] = (), *, record: bool = False) -> RunResult:
    """Run as ``hardware.mode`` says (measure, validate, auto or predict); with ``record=True``
    the run is recorded in MLflow (``tracking.*`` settings apply) exactly as the Hydra task
    records it."""
    try:
        container = compose(list(overrides))
    except Exception as error:
        return RunResult(Status.INVALID_CONFIG, f"invalid overrides {list(overrides)}: {error}", "none")
    if not record:
        return run_container(container)
    from dabench.tracking.describe import reproduce_command, run_note, summary_line
    from dabench.tracking.naming import run_name

    name = (container.get("tracking") or {}).get("run_name") or run_name(placed(container))
    command = reproduce_command(list(overrides))
    with tempfile.TemporaryDirectory(prefix="dabench-run-") as tmp:
        return record_run(container, artifacts_dir=Path(tmp) / "artifacts", name=name,
                          note=lambda r: run_note(summary_line(r, name), command))[0]
