"""System metrics (``system/*``, MLflow's own sampler) of a measured run while its work runs;
none for predicted runs. Interval: ``tracking.system_metrics_interval_s`` (0 turns it off)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

from dabench.backends import get_backend
from dabench.config.sections import RunConfig

log = logging.getLogger(__name__)


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
