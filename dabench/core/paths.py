"""Where dabench was started from."""

from __future__ import annotations

from pathlib import Path


def launch_dir() -> Path:
    """The directory dabench was started from (Hydra's original cwd when inside a Hydra job)."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.cwd)
    return Path.cwd()
