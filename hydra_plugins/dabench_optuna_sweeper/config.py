"""The sweeper's config, registered as ``hydra/sweeper=dabench_optuna``.

Fields (all settable as ``hydra.sweeper.<field>=...``):

- ``n_trials``: total trials of the study (a re-run resumes and runs only the missing ones).
- ``n_jobs``: trials launched together per batch (match the launcher's parallelism). With a
  launcher that runs jobs on this machine (submitit local, joblib) it is capped at the cores
  (over the launcher's ``cpus_per_task``) unless ``allow_oversubscribe`` is true.
- ``direction``: ``maximize`` (throughput) or ``minimize``.
- ``study_name``: default ``<sweep_name>-<model>[-<hash of other overrides>]``.
- ``storage``: an SQLAlchemy URL; default ``sqlite:///<launch dir>/mlruns/optuna.db``.
- ``sampler``: tpe, random, gp, cmaes, qmc, nsgaii or bruteforce; ``sampler_options`` (keyword
  arguments of the optuna.samplers class); ``seed`` (default none: each worker of a study samples
  with its own random seed; several workers given one seed would propose alike; a resumed study continues with seed
  + the
  number of trials it holds, so it does not replay the first run's draws).
- ``failed_as_infeasible``: with TPE, show failed trials to the sampler as infeasible points.
- ``params``: {key: Hydra override sweep text}: choice(...), range(...), interval(...), tag(log, ...);
  sweeps given on the command line (``run.batch_size=1,2,4``) replace the entry of the same key,
  and a plain value there (``precision=fp16``) fixes it.
- ``space.hook`` / ``space.args``: a structured-space factory (see dabench.tune.structured).
- ``allow_space_change``: resume a study whose search space (params, fixed overrides, hook,
  hook args) differs from the one it was created with; refused (exit 2) otherwise.

Every field is checked before the study storage is touched (dabench/tune/settings.py): a bad one
is one line naming the field, the value and what is valid, and exit status 2.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from hydra.core.config_store import ConfigStore


@dataclass
class StructuredSpaceConf:
    hook: Optional[str] = None
    args: Dict[str, Any] = field(default_factory=dict)


@dataclass
class DabenchOptunaSweeperConf:
    _target_: str = "hydra_plugins.dabench_optuna_sweeper.sweeper.DabenchOptunaSweeper"
    sweep_name: Optional[str] = None
    study_name: Optional[str] = None
    storage: Optional[str] = None
    direction: str = "maximize"
    n_trials: int = 20
    n_jobs: int = 1
    sampler: str = "tpe"
    seed: Optional[int] = None
    sampler_options: Dict[str, Any] = field(default_factory=dict)
    failed_as_infeasible: bool = True
    allow_oversubscribe: bool = False
    allow_space_change: bool = False
    params: Dict[str, Any] = field(default_factory=dict)
    space: StructuredSpaceConf = field(default_factory=StructuredSpaceConf)


ConfigStore.instance().store(
    group="hydra/sweeper", name="dabench_optuna", node=DabenchOptunaSweeperConf, provider="dabench_optuna_sweeper"
)
