"""Compose a run's config from conf/ with Hydra's compose API, initialised once per process.

Overrides are Hydra's command-line overrides (the strings ``python -m dabench`` takes). Each call
installs dabench's Hydra in GlobalHydra, composes and leaves GlobalHydra as it found it.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from dabench.config.paths import CONF_DIR

_lock = threading.Lock()
_hydra = None  #: our Hydra object (config search path on conf/), built once per process


def compose(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config (a plain dict, without the ``hydra`` node) for ``overrides``.

    Hydra's composition machinery for conf/ is built on first use and kept; each call installs it
    in GlobalHydra, composes and leaves GlobalHydra as it found it (a Hydra app or a test's own
    ``initialize_config_dir`` is not disturbed)."""
    global _hydra
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    with _lock:
        gh = GlobalHydra.instance()
        previous = gh.hydra if gh.is_initialized() else None
        gh.clear()
        try:
            if _hydra is None:
                initialize_config_dir(config_dir=str(CONF_DIR), version_base=None, job_name="dabench")
                _hydra = gh.hydra
            else:
                gh.initialize(_hydra)
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
        finally:
            gh.clear()
            if previous is not None:
                gh.initialize(previous)
    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("hydra", None)
    return container
