"""``hydra/launcher=dabench_inprocess``: a ``-m`` multirun's jobs run through dabench's
in-process grid (:func:`dabench.pipeline.grid.run_grid`) instead of one Hydra job each.

    python -m dabench hardware=cuda hardware.mode=predict model.n_layers=6,12,24 -m hydra/launcher=dabench_inprocess

The sweep, the multirun parent run (pipeline/multirun_parent.py) and the results table stay Hydra's;
each configuration is still its own MLflow run, a child of the multirun's parent, with its real
start and end times and the params, metrics and tags a Hydra job records. What a job would
have and these runs do not: a working folder with ``.hydra/`` files and a log per job, and
(for predicted runs) per-run artifact files; a measured configuration is recorded one at a time
with its artifacts, as in ``python -m dabench grid``.
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
