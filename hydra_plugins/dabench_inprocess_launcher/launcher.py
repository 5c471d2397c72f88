"""The in-process launcher (see the package docstring)."""

from __future__ import annotations

import logging
from typing import Any, Sequence

from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher

from dabench.pipeline.grid import run_grid, summary
from dabench.tune.outcome import job_outcome

log = logging.getLogger(__name__)


class InProcessLauncher(Launcher):
    def __init__(self, flush_every: int = 100) -> None:
        self.flush_every = flush_every
        self.config = None

    def setup(self, *, hydra_context: Any, task_function: Any, config: Any) -> None:
        self.config = config

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        """Each job's overrides through :func:`dabench.pipeline.grid.run_grid` (the parent run comes from
        ``$DABENCH_PARENT_RUN_ID``, set by the multirun callback, or from the sweeper's
        ``tracking.parent_run_id``); one JobReturn per job whose value is the task function's
        (:func:`dabench.tune.outcome.job_outcome`: samples/s carrying status, reason and mode)."""
        log.info("Launching %d jobs in this process (dabench_inprocess)", len(job_overrides))
        runs = run_grid(
            [list(o) for o in job_overrides],
            flush_every=self.flush_every,
            on_run=lambda run: print(summary(run), flush=True),
        )
        return [  # each run's status is in the summary line on_run printed
            JobReturn(
                overrides=list(run.overrides),
                task_name="dabench",
                status=JobStatus.COMPLETED,
                _return_value=job_outcome(run.result),
            )
            for run in runs
        ]
