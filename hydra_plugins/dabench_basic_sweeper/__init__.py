"""dabench's default ``-m`` sweeper: Hydra's BasicSweeper (same ``params``, ``max_batch_size``),
composing each set of group choices once (dabench.config.compose's cache) where Hydra composed every
job twice; stored under Hydra's own name ``hydra/sweeper/basic``, so a config that picks another
sweeper is unaffected (docs/architecture.md).
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
