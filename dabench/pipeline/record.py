"""Recording a run, in one place: :func:`record_run` runs a prepared job
(:mod:`dabench.pipeline.job`) inside an MLflow run opened before the work and closed on every exit
path, and writes its artifacts; :func:`run_record` is what any recorded run carries (params,
metrics, tags); :func:`system_metrics` samples a measured run's ``system/*`` metrics (MLflow's own
sampler, every ``tracking.system_metrics_interval_s``, 0 turns it off) while it works. The Hydra
task, the grid, the in-process launcher (through the grid) and :mod:`dabench.api` all record
through these (docs/architecture.md, "Run lifecycle").
"""

from __future__ import annotations

import logging
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from dabench.backends import get_backend
from dabench.config.build import flatten
from dabench.config.sections import RunConfig
from dabench.core.result import RunResult
from dabench.core.status import Status
from dabench.pipeline.job import Job, execute_job
from dabench.report.artifacts import write_artifacts
from dabench.runtime import faults
from dabench.tracking.describe import NOTE_TAG
from dabench.tracking.lifecycle import UNCLOSED, recorded_run, write_error_status
from dabench.tracking.naming import key_problem, run_tags

log = logging.getLogger("dabench")


@dataclass
class RunRecord:
    """What a recorded run carries: params (the flattened config), metrics and tags."""

    params: dict[str, Any]
    metrics: dict[str, float]
    tags: dict[str, str]


def run_record(result: RunResult, container: Mapping[str, Any], note: str | None = None) -> RunRecord:
    """The params, metrics and tags of ``result`` (of ``container``): tags from
    :func:`dabench.tracking.naming.run_tags` (``dabench.mode=none`` for a refused config), and
    ``note`` (the summary line and reproduce command) as the run's description when given."""

    tags = run_tags(result.run_config, result, container)
    params = flatten(container)
    if result.run_config is None:
        tags["dabench.mode"] = "none"
        params = {k: v for k, v in params.items() if not key_problem(k)}  # a refused key is named in the reason
    if note is not None:
        tags[NOTE_TAG] = note
    return RunRecord(params, dict(result.metrics), tags)


def record_run(
    job: Job,
    *,
    artifacts_dir: Path | None = None,
    name: str | None = None,
    note: Callable[[RunResult], str] | None = None,
) -> tuple[RunResult, str | None]:
    """(result, MLflow run id or None) of ``job``: the MLflow run is opened before the work and
    closed after it on every exit path (:func:`dabench.tracking.lifecycle.recorded_run`), and
    carries :func:`run_record`; artifacts (config, result JSON, plots) are written to
    ``artifacts_dir`` and logged. ``name`` defaults to ``job.name``; ``note(result)`` gives the
    run's description. With ``tracking.enabled=false`` nothing is recorded."""
    container = job.container
    tracking = container.get("tracking") or {}
    name = name or job.name
    opened = nullcontext(None)
    if tracking.get("enabled", True):
        opened = recorded_run(
            experiment=tracking.get("experiment") or "dabench",
            uri=tracking.get("uri"),
            run_name=name,
            status_tags=False,
            parent_id=tracking.get("parent_run_id") or None,
        )
    with ExitStack() as stack:
        try:
            run = stack.enter_context(opened)
        except OSError as error:  # the store (or the outbox) cannot be written: no run, no work
            result = RunResult(Status.CRASHED, "", "none", config=container)
            _not_written(result, error, "the run could not be opened in the store")
            return result, None

        faults.check("run_body")  # tests: hold here until signalled (dabench/runtime/faults.py)

        with system_metrics(run, job.rc):  # measured runs: MLflow's system-metrics sampler while the work runs
            result = execute_job(job)
        try:
            artifacts = _write_artifacts(artifacts_dir, container, result, name)
        except OSError as error:  # a full disk or a read-only folder: the record is not complete
            artifacts = None
            _not_written(result, error, f"artifacts not written to {artifacts_dir}")
        if run is not None:
            _log(run, result, container, note, artifacts)
    if run is not None and run.run_id in UNCLOSED:  # the store failed at the very end
        _not_written(result, RuntimeError(UNCLOSED[run.run_id]), "the run could not be closed in the store")
    return result, (run.run_id if run is not None else None)


def _log(
    run,
    result: RunResult,
    container: Mapping[str, Any],
    note: Callable[[RunResult], str] | None,
    artifacts: Path | None,
) -> None:
    """Log :func:`run_record` and the artifacts onto the open ``run`` and set its status; a store
    that fails here makes the result ``tracking_error`` / ``disk_full``."""

    record = run_record(result, container, note(result) if note is not None else None)
    try:
        run.log(params=record.params, metrics=record.metrics, tags=record.tags)
        run.log_artifacts(artifacts)
    except Exception as error:  # the store became unreachable, or its disk is full
        _not_written(result, error, "the run store could not record the run", write_error_status(error))
        run.status_tags = True  # the tags above were not written: closing writes the status
    run.set_status(result.status, result.reason)


def _not_written(result: RunResult, error: BaseException, what: str, status: Status | None = None) -> None:
    """``ok`` means every metric and artifact was written: a write failure replaces the status
    (``disk_full`` for ENOSPC/EDQUOT, else ``tracking_error``), keeping an earlier failure's
    reason after the write error."""

    before = "" if result.status is Status.OK else f" (the run itself: {result.status.value}: {result.reason})"
    result.status = status or write_error_status(error)
    result.reason = f"{what}: {type(error).__name__}: {error}{before}"
    log.error("%s", result.reason)


def _write_artifacts(folder: Path | None, container: Mapping[str, Any], result: RunResult, name: str) -> Path | None:
    """Write the run's artifacts into ``folder``. An OSError (full disk, read-only folder) is
    raised: the run is then not ok. Any other error (a plot that cannot be drawn) is a warning."""
    if folder is None:
        return None

    faults.check("artifacts", folder)
    try:
        copies = result.run_config.data_copies if result.run_config is not None else 1
        return write_artifacts(folder, container, result, name, copies)
    except OSError:
        raise
    except Exception as error:  # a broken plot must not lose the run
        log.warning("could not write artifacts: %s", error)
        return None


def is_measured(rc: RunConfig | None) -> bool:
    """True when ``rc`` will run on a device: mode measure/validate, or auto with the backend available."""
    if rc is None or rc.hardware.mode == "predict":
        return False
    if rc.hardware.mode in ("measure", "validate"):
        return True
    try:
        return bool(get_backend(rc.hardware.backend).availability(rc).ok)
    except Exception:
        return False


@contextmanager
def system_metrics(run, rc: RunConfig | None) -> Iterator[None]:
    """Sample system metrics onto ``run`` (or nothing: None) while the body runs, for measured runs."""
    interval = float(getattr(rc.tracking, "system_metrics_interval_s", 0) or 0) if rc is not None else 0.0
    monitor = None
    if run is not None and interval > 0 and is_measured(rc):
        try:
            from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

            monitor = SystemMetricsMonitor(run.run_id, sampling_interval=interval, tracking_uri=run.client.tracking_uri)
            monitor.start()
        except Exception as error:  # psutil missing, a store that refuses: the run goes on
            log.warning("no system metrics for this run: %s", error)
            monitor = None
    try:
        yield
    finally:
        if monitor is not None:
            try:
                monitor.finish()
                last = monitor.aggregate_metrics()
                if last:
                    monitor.publish_metrics(last)
                    monitor.mlflow_logger.flush()
            except Exception as error:
                log.warning("system metrics not flushed: %s", error)
