"""System metrics of a measured run: MLflow's own sampler (CPU, memory, disk, network; GPU when
present), started when the work starts and stopped when it ends, logged as ``system/*`` metrics
of the run (the MLflow UI's "System metrics" tab). Predicted runs get none (nothing ran on a
device). Interval: ``tracking.system_metrics_interval_s`` (seconds; 0 turns it off)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

from dabench.backends import get_backend
from dabench.config.sections import RunConfig

log = logging.getLogger(__name__)


def is_measured(rc: RunConfig | None) -> bool:
    """True when ``rc`` will run on a device: mode measure/validate, or auto with the backend
    available (the same test dabench.pipeline.execute.resolve_mode makes, without its messages)."""
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
    """Sample system metrics onto ``run`` (a :class:`~dabench.tracking.lifecycle.RecordedRun`, or
    None) while the body runs, when ``rc`` is measured and the interval is positive."""
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
                # MLflow's loop publishes once per full interval; the samples of the last (or only,
                # for a run shorter than one interval) partial interval are published here
                last = monitor.aggregate_metrics()
                if last:
                    monitor.publish_metrics(last)
                    monitor.mlflow_logger.flush()
            except Exception as error:
                log.warning("system metrics not flushed: %s", error)
