"""The Hydra callback that shows a sweep's progress (stderr) and ends a ``-m`` multirun with its
results table (printed, ``<sweep dir>/results.csv``, an artifact of the parent run). Registered
after ``mlflow_parent`` (conf/config.yaml): Hydra ends callbacks in reverse, the parent is still open.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from dabench.runtime.hydra_compat import BasicSweeper
from dabench.runtime.progress import SweepProgress
from dabench.tracking.describe import task_overrides
from dabench.tracking.lifecycle import PARENT_ENV
from dabench.tracking.outbox import PREFIX
from dabench.tracking.redact import redact_overrides

log = logging.getLogger(__name__)

_current: SweepProgress | None = None


def current() -> SweepProgress | None:
    """The progress line of the sweep running in this process, if any."""
    return _current


def is_study(config: DictConfig) -> bool:
    """Is this multirun a study (dabench's Optuna sweeper), which records and reports itself?"""
    return "dabench_optuna_sweeper" in str(OmegaConf.select(config, "hydra.sweeper._target_") or "")


def job_count(config: DictConfig) -> int | None:
    """Jobs of a basic-sweeper multirun (``hydra.sweeper.params`` then the command line); None if unparsable."""
    try:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        params = OmegaConf.select(config, "hydra.sweeper.params") or {}
        parsed = OverridesParser.create().parse_overrides(
            [f"{k}={v}" for k, v in params.items()] + task_overrides(config.hydra)
        )
        return sum(len(batch) for batch in BasicSweeper.split_arguments(parsed, None))
    except Exception as error:  # the sweeper itself reports bad overrides
        log.debug("could not count the sweep's jobs: %s", error)
        return None


def _job_ok(job_return: Any) -> bool:
    from hydra.core.utils import JobStatus

    if getattr(job_return, "status", None) != JobStatus.COMPLETED:
        return False
    return getattr(job_return.return_value, "status", None) in (None, "ok")  # a job without a JobOutcome: ok


def _untracked_row(config: DictConfig, job_return: Any) -> dict[str, Any]:
    """A frame row from a job's return (the task's JobOutcome), named by its overrides."""
    outcome = getattr(job_return, "_return_value", None)
    status = getattr(outcome, "status", None) or ("ok" if _job_ok(job_return) else "crashed")
    value = float(outcome) if isinstance(outcome, float) else float("nan")
    figures = dict(getattr(outcome, "figures", None) or {})
    return {
        "run_id": "",
        "run_name": " ".join(redact_overrides(task_overrides(config.hydra))),
        "mlflow_status": "",
        "tags.dabench.status": status,
        "tags.dabench.mode": getattr(outcome, "mode", None),
        "tags.dabench.reason": getattr(outcome, "reason", "") or "",
        "tags.dabench.diagnosis": figures.pop("diagnosis", ""),
        "metrics.throughput.samples_per_s": value if status == "ok" else float("nan"),
        **{f"metrics.{name}": number for name, number in figures.items()},  # the diagnosis popped above
    }


class SweepResultsCallback(Callback):
    def __init__(self) -> None:
        self.untracked: list[dict[str, Any]] = []  #: jobs of a multirun with tracking.enabled=false

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _current
        study = is_study(config)
        total = OmegaConf.select(config, "hydra.sweeper.n_trials") if study else job_count(config)
        if total:
            _current = SweepProgress(int(total), "study" if study else "multirun", "trials" if study else "runs")

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if _current is not None:
            _current.clear()

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if _current is not None:
            _current.finished(_job_ok(job_return))
        self.untracked.append(_untracked_row(config, job_return))  # the table where MLflow cannot give it

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global _current
        if _current is not None:
            _current.close()
            _current = None
        if is_study(config):
            return  # the study sweeper prints and records its own (it holds the parent run)
        import pandas as pd

        from dabench.report.frame import client_for, normalize
        from dabench.report.results import record_sweep_results, render_results, write_results_csv

        parent = os.environ.get(PARENT_ENV) or ""
        tracking = config.get("tracking") or {}
        folder = Path(str(config.hydra.runtime.cwd)) / str(config.hydra.sweep.dir)  # an absolute one stays
        rows, self.untracked = self.untracked, []
        title = "multirun results (not recorded: tracking.enabled=false)"
        if tracking.get("enabled", True):
            title = "multirun results (from the jobs: their runs wait in the outbox; dabench sync records them)"
        if tracking.get("enabled", True) and parent and not parent.startswith(PREFIX):
            try:
                table = record_sweep_results(client_for(tracking.get("uri")), parent, folder, "multirun results")
                print(table, flush=True)
                return
            except Exception as error:  # the runs are recorded; the table comes from the jobs instead
                log.warning("could not read the multirun's results from the tracking store: %s", error)
                title = "multirun results (from the jobs: the tracking store gave no table)"
        if rows:
            frame = normalize(pd.DataFrame(rows))
            path = write_results_csv(frame, folder / "results.csv")
            print(render_results(frame, title) + f"\nresults.csv: {path}", flush=True)
