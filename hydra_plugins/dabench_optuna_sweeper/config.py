"""The sweeper's config, registered as ``hydra/sweeper=dabench_optuna``; every field is settable as
``hydra.sweeper.<field>=...`` and checked before the study storage is touched (dabench/tune/settings.py).
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from hydra.core.config_store import ConfigStore


@dataclass
class StructuredSpaceConf:
    hook: Optional[str] = None  #: a structured-space factory 'module:factory' (dabench.tune.structured)
    args: Dict[str, Any] = field(default_factory=dict)  #: its keyword arguments


@dataclass
class DabenchOptunaSweeperConf:
    _target_: str = "hydra_plugins.dabench_optuna_sweeper.sweeper.DabenchOptunaSweeper"
    sweep_name: Optional[str] = None  #: the sweep's name: the first part of the derived study name
    study_name: Optional[str] = None  #: default <sweep_name>-<model>[-<hash of other overrides>]
    storage: Optional[str] = None  #: an SQLAlchemy URL; default sqlite:///<launch dir>/mlruns/optuna.db
    direction: str = "maximize"  #: maximize (throughput) or minimize
    n_trials: int = 20  #: the study's total trials (a re-run resumes and runs the missing ones)
    n_jobs: int = 1  #: trials launched together per batch (capped at the cores for local launchers)
    sampler: str = "tpe"  #: tpe, random, gp, cmaes, qmc, nsgaii or bruteforce
    seed: Optional[int] = None  #: none: each worker its own; a resumed study uses seed + its trial count
    sampler_options: Dict[str, Any] = field(default_factory=dict)  #: keyword arguments of the optuna.samplers class
    failed_as_infeasible: bool = True  #: with TPE, show failed trials to the sampler as infeasible points
    allow_oversubscribe: bool = False  #: let n_jobs exceed this machine's cores (over cpus_per_task)
    allow_space_change: bool = False  #: resume a study whose search space changed (refused, exit 2, otherwise)
    params: Dict[str, Any] = field(default_factory=dict)  #: {key: choice(...), range(...), interval(...) or a value}
    space: StructuredSpaceConf = field(default_factory=StructuredSpaceConf)


ConfigStore.instance().store(
    group="hydra/sweeper", name="dabench_optuna", node=DabenchOptunaSweeperConf, provider="dabench_optuna_sweeper"
)
