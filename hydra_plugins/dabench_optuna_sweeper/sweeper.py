"""The Sweeper: Hydra glue around :func:`dabench.tune.sweep.run_study`, handing it the task config,
this worker's sweep folder and a launch function (the configured Hydra launcher, each JobReturn
turned into a JobOutcome). See docs/tuning.md and docs/scale-out.md.
"""

from __future__ import annotations

import math
import os
import socket
from pathlib import Path
from typing import Any, List, Optional

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from dabench.core.status import Status
from dabench.runtime.sinks import make_dir
from dabench.tracking.redact import redact_hydra_output
from dabench.tune.settings import StructuredSpaceSettings, SweepSettings
from hydra_plugins.dabench_optuna_sweeper import config as _config  # noqa: F401  registers the config


class DabenchOptunaSweeper(Sweeper):
    def __init__(self, space: Optional[dict] = None, **settings: Any) -> None:
        """``settings``: the other fields of SweepSettings (dabench/tune/settings.py)."""
        space = dict(space or {})
        for key in ("sampler_options", "params"):
            settings[key] = dict(settings.get(key) or {})
        self.settings = SweepSettings(
            **settings, space=StructuredSpaceSettings(space.get("hook"), dict(space.get("args") or {}))
        )
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None
        self.launcher = None
        self.sweep_dir: Optional[Path] = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from hydra.core.plugins import Plugins

        self.hydra_context, self.config = hydra_context, config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def _task_config(self) -> dict[str, Any]:
        """The composed task config (no ``hydra`` node) as a plain dict."""
        assert self.config is not None
        return {
            key: OmegaConf.to_container(self.config[key], resolve=True)
            if OmegaConf.is_config(self.config[key])
            else self.config[key]
            for key in self.config
            if key != "hydra"
        }

    def _outcome(self, job_return) -> Any:
        """A Hydra JobReturn -> dabench.tune.outcome.JobOutcome (a failed job: crashed, or a
        pre-flight refusal that does not count toward the budget)."""
        from hydra.core.utils import JobStatus

        from dabench.tune.outcome import JobOutcome, outcome_of

        job_dir = getattr(job_return, "working_dir", None)
        if job_return.status == JobStatus.FAILED:
            error = job_return._return_value
            if isinstance(error, SystemExit) and error.code == 2:  # refused by the job's pre-flight
                return JobOutcome(
                    math.nan,
                    Status.TRACKING_ERROR.value,
                    "the job's pre-flight refused its surroundings (tracking store, artifact or run "
                    "folder); see the job's log",
                    job_dir=job_dir,
                )
            reason = f"the job raised {type(error).__name__}: {error}"
            return JobOutcome(math.nan, Status.CRASHED.value, reason, job_dir=job_dir)
        return outcome_of(job_return.return_value, job_dir)

    def _own_sweep_dir(self) -> Path:
        """This worker's sweep folder: ``hydra.sweep.dir``, or ``<dir>-<host>-<pid>`` when another
        worker (or an earlier invocation) already holds that folder (mkdir is atomic)."""
        assert self.config is not None
        launch_dir = Path(self.config.hydra.runtime.cwd)
        folder = Path(str(self.config.hydra.sweep.dir))
        absolute = folder if folder.is_absolute() else launch_dir / folder
        make_dir("run_dir", absolute.parent)
        try:
            self.sweep_dir = make_dir("run_dir", absolute, exist_ok=False)
            return self.sweep_dir
        except FileExistsError:
            pass
        mine = Path(f"{folder}-{socket.gethostname()}-{os.getpid()}")
        configs = [self.config] + [
            c for c in (getattr(self.launcher, "config", None),) if c is not None and c is not self.config
        ]
        for config in configs:  # the launcher reads hydra.sweep.dir when it launches
            with read_write(config), open_dict(config):
                config.hydra.sweep.dir = str(mine)
        self.sweep_dir = mine if mine.is_absolute() else launch_dir / mine
        return self.sweep_dir

    def _launch(self, job_overrides: list[list[str]], first_index: int) -> list:
        self.validate_batch_is_legal(job_overrides)
        try:
            returns = self.launcher.launch(job_overrides, initial_job_idx=first_index)
        finally:
            redact_hydra_output(self.sweep_dir)  # the launcher's multirun.yaml holds the command's overrides
        return [self._outcome(r) for r in returns]

    def sweep(self, arguments: List[str]) -> Any:
        from dabench.tune.sweep import SweepJobs, run_study  # optuna: only when a study sweeps

        assert self.config is not None and self.launcher is not None
        searchpath = OmegaConf.select(self.config, "hydra.overrides.hydra") or []
        jobs = SweepJobs(
            task_config=self._task_config(),
            launch_dir=Path(self.config.hydra.runtime.cwd),
            launch=self._launch,
            sweep_dir=self._own_sweep_dir,
            launcher=type(self.launcher).__name__,
            ray_address=str(OmegaConf.select(self.config, "hydra.launcher.ray.init.address") or "local"),
            cpus_per_task=int(OmegaConf.select(self.config, "hydra.launcher.cpus_per_task") or 1),
            searchpath=[o for o in searchpath if o.startswith("hydra.searchpath=")],
        )
        summary = run_study(self.settings, arguments, jobs)
        redact_hydra_output(self.sweep_dir)
        return summary
