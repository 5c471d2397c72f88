"""The one way a composed config becomes a recorded run: ``run_container`` (the pipeline, no
MLflow) and ``record_run`` (the same inside an MLflow run opened before the work and closed on
every exit path). The Hydra task, the grid, the in-process launcher and :mod:`dabench.api` all
call these (docs/architecture.md, "Run lifecycle").
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Mapping

from dabench.config.build import apply_placement, build_run_config, flatten
from dabench.config.sections import RunConfig
from dabench.core.status import ConfigError, Status
from dabench.core.result import RunResult
from dabench.pipeline.execute import execute

log = logging.getLogger("dabench")


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
    from dabench.pipeline.preflight import job_problems  # memory and ranks of a measured CPU run

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
        from dabench.runtime import faults

        faults.check("run_body")  # tests: hold here until signalled (dabench/runtime/faults.py)
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
    from dabench.runtime import faults

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
