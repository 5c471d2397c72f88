"""Where dabench was started from."""

from __future__ import annotations

from pathlib import Path


def launch_dir() -> Path:
    """The directory dabench was started from (Hydra's original cwd when inside a Hydra job)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            return Path(HydraConfig.get().runtime.cwd)
    except ImportError:  # pragma: no cover - hydra is a dependency
        pass
    return Path.cwd()
