"""``hydra/launcher=dabench_inprocess``: a ``-m`` multirun's jobs run through dabench's in-process
grid (:func:`dabench.pipeline.grid.run_grid`) instead of one Hydra job each: each configuration is
still its own MLflow run, without a job folder, ``.hydra/`` files or (predicted) artifact files
(docs/architecture.md).
"""

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore


@dataclass
class DabenchInprocessLauncherConf:
    _target_: str = "hydra_plugins.dabench_inprocess_launcher.launcher.InProcessLauncher"
    flush_every: int = 100  #: finished runs written to MLflow at once


ConfigStore.instance().store(
    group="hydra/launcher", name="dabench_inprocess", node=DabenchInprocessLauncherConf, provider="dabench"
)
