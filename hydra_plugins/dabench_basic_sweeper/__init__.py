"""dabench's default ``-m`` sweeper: Hydra's BasicSweeper, composing each job's config once.

Hydra's BasicSweeper checks every batch before launching it (``Sweeper.validate_batch_is_legal``
composes *each* job's config), and the launcher then composes each one again to run it: every
configuration of a multirun was composed twice, about half of a predicted job's time once the
per-run plot is gone (issue 15). :class:`~.sweeper.BasicSweeper` keeps the early check but
composes one job per *shape* (:func:`~.sweeper.shape`).

Hydra imports every module under the ``hydra_plugins`` namespace package when it scans for
plugins, after its core plugins; this package then stores its sweeper config under Hydra's own
name ``hydra/sweeper/basic`` (replacing Hydra's entry), so the default ``-m`` uses it while a
config that picks another sweeper (``override /hydra/sweeper: dabench_optuna``) keeps working.
Same parameters as Hydra's (``params``, ``max_batch_size``).
"""

from dataclasses import dataclass
from typing import Dict, Optional

from hydra.core.config_store import ConfigStore


@dataclass
class DabenchBasicSweeperConf:
    _target_: str = "hydra_plugins.dabench_basic_sweeper.sweeper.BasicSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="basic", node=DabenchBasicSweeperConf, provider="dabench")
