"""The Hydra callback that turns a ``-m`` multirun into one MLflow parent run with children.

The parent's id goes to the jobs in ``$DABENCH_PARENT_RUN_ID``; at the end it logs the children's
counts by status and the best ok throughput; interrupted, it closes KILLED with the counts so far.
The store is pre-flighted first. Nothing with ``tracking.enabled=false`` (docs/tuning.md).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from dabench.core.status import Status
from dabench.pipeline.preflight import UNREACHABLE, check_store, refuse
from dabench.report.sweep_callback import is_study
from dabench.runtime import interrupts
from dabench.tracking.describe import reproduce_command, requested_mode, task_overrides
from dabench.tracking.lifecycle import PARENT_ENV, ParentRun
from dabench.tracking.store import apply_client_timeouts, tracking_uri

log = logging.getLogger(__name__)


class MlflowParentRunCallback(Callback):
    def __init__(self) -> None:
        self.run: ParentRun | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        tracking = config.get("tracking") or {}
        if is_study(config) or not tracking.get("enabled", True):
            return  # a study keeps one parent run for all its workers (dabench/tune/parent_run.py)
        uri = tracking_uri(tracking.get("uri"))
        apply_client_timeouts(tracking.get("timeout_s"))  # the parent's own calls wait no longer than the jobs'
        problems = check_store(uri, "tracking.uri", float(tracking.get("timeout_s") or 3.0))
        # e.g. a corrupt mlflow.db: one line before any job, not a traceback after; an unreachable
        # server is no refusal (the outbox keeps the records)
        refuse([p for p in problems if p.kind != UNREACHABLE])
        overrides = task_overrides(config.hydra)

        name = tracking.get("run_name") or "multirun " + " ".join(overrides)
        # opened now (real start time), closed in on_multirun_end (real end time)
        self.run = ParentRun.start(
            "multirun",
            experiment=tracking.get("experiment") or "dabench",
            uri=uri,
            run_name=name,
            note=f"Multirun:\n\n    {reproduce_command(overrides, multirun=True)}",
            mode=requested_mode(OmegaConf.select(config, "hardware.mode")),
        )
        self.run.log(
            params={"multirun.overrides": " ".join(overrides), "multirun.sweep_dir": str(config.hydra.sweep.dir)}
        )
        self.previous_env = os.environ.get(PARENT_ENV)
        os.environ[PARENT_ENV] = self.run.run_id

        self._unregister = interrupts.on_interrupt(self._close_interrupted)  # Ctrl-C, SIGTERM
        log.info("MLflow parent run %s (%s)", self.run.run_id, uri)

    def _close_interrupted(self) -> str:
        """Close the parent KILLED with the counts of the runs so far (dabench/runtime/interrupts.py)."""

        counts = self._finish(Status.INTERRUPTED)
        done = sum(n for status, n in counts.items() if status != Status.INTERRUPTED.value)
        interrupts.progress(done=done)
        listed = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no runs"
        return f"parent run {self.run.run_id} closed KILLED ({listed})"

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        interrupts.progress(done=(interrupts.progress().done or 0) + 1)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.run is None:
            return
        self._unregister()
        counts = self._finish(Status.OK)
        log.info("multirun recorded: %d jobs %s under parent run %s", sum(counts.values()), counts, self.run.run_id)

    def _finish(self, end_status: Status) -> dict[str, int]:
        """Close the parent with its children's counts (``end_status``: ok -> FINISHED,
        interrupted -> KILLED); returns the counts."""
        counts = self.run.finish(end_status)
        if self.previous_env is None:
            os.environ.pop(PARENT_ENV, None)
        else:
            os.environ[PARENT_ENV] = self.previous_env
        return counts
