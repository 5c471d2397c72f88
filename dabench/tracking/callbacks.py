"""The Hydra callback that turns a ``-m`` multirun into one MLflow parent run with children.

At multirun start it creates the parent run and exports its id in ``$DABENCH_PARENT_RUN_ID``;
every job's run (in-process or in a launcher's worker process, which inherits the environment)
tags itself ``mlflow.parentRunId``. At the end it counts the children by ``dabench.status`` and
logs the best throughput among the ok ones. With ``tracking.enabled=false`` it does nothing.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from dabench.status import Status, is_ok
from dabench.tracking.lifecycle import PARENT_ENV, git_commit, open_run
from dabench.tracking.store import launch_dir, tracking_uri

log = logging.getLogger(__name__)


class MlflowParentRunCallback(Callback):
    def __init__(self) -> None:
        self.run_id: str | None = None
        self.run = None
        self.client = None
        self.previous_env: str | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        tracking = config.get("tracking") or {}
        if not tracking.get("enabled", True):
            return
        if "dabench_optuna_sweeper" in str(OmegaConf.select(config, "hydra.sweeper._target_") or ""):
            return  # a study keeps one parent run for all its workers (dabench/tune/tracking.py)
        uri = tracking_uri(tracking.get("uri"))
        overrides = list(config.hydra.overrides.task)
        name = tracking.get("run_name") or "multirun " + " ".join(overrides)
        # opened now (real start time), closed in on_multirun_end (real end time)
        self.run = open_run(experiment=tracking.get("experiment") or "dabench", uri=uri, run_name=name,
                            parent_id="", standard=False,
                            tags={"dabench.parent": "true", "dabench.git_commit": git_commit(launch_dir()),
                                  "mlflow.note.content": f"Multirun: python -m dabench {' '.join(overrides)} -m"})
        self.run.status_tags = False
        self.client, self.run_id = self.run.client, self.run.run_id
        self.run.log(params={"multirun.overrides": " ".join(overrides), "multirun.sweep_dir": str(config.hydra.sweep.dir)})
        self.previous_env = os.environ.get(PARENT_ENV)
        os.environ[PARENT_ENV] = self.run_id
        log.info("MLflow parent run %s (%s)", self.run_id, uri)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.run_id is None:
            return
        from mlflow.entities import Metric

        children = self.client.search_runs(
            [self.client.get_run(self.run_id).info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{self.run_id}'",
            max_results=50000,
        )
        counts: dict[str, int] = {}
        best = None
        for child in children:
            status = child.data.tags.get("dabench.status", "unknown")
            counts[status] = counts.get(status, 0) + 1
            value = child.data.metrics.get("throughput.samples_per_s")
            if is_ok(status) and value is not None and (best is None or value > best):
                best = value
        now = int(time.time() * 1000)
        metrics = [Metric("jobs.total", float(len(children)), now, 0)]
        metrics += [Metric(f"jobs.{status}", float(n), now, 0) for status, n in counts.items()]
        if best is not None:
            metrics.append(Metric("jobs.best_samples_per_s", best, now, 0))
        self.client.log_batch(self.run_id, metrics=metrics)
        self.run.close(Status.OK)
        if self.previous_env is None:
            os.environ.pop(PARENT_ENV, None)
        else:
            os.environ[PARENT_ENV] = self.previous_env
        log.info("multirun recorded: %d jobs %s under parent run %s", len(children), counts, self.run_id)
