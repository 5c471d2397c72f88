"""The sweeper's config, registered as ``hydra/sweeper=dabench_optuna``: its fields are
:class:`dabench.tune.settings.SweepSettings` (each settable as ``hydra.sweeper.<field>=...`` and checked
before the study storage is touched).
"""

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore

from dabench.tune.settings import SweepSettings


@dataclass
class DabenchOptunaSweeperConf(SweepSettings):
    _target_: str = "hydra_plugins.dabench_optuna_sweeper.sweeper.DabenchOptunaSweeper"


ConfigStore.instance().store(
    group="hydra/sweeper", name="dabench_optuna", node=DabenchOptunaSweeperConf, provider="dabench_optuna_sweeper"
)
