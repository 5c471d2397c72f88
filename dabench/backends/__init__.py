"""Measured backends: ``hardware.backend`` name -> implementing class, as the platform registry
(:mod:`dabench.core.platforms`) names it; imported only when used, so that ``--help`` and
predict-mode runs never import torch or a vendor SDK they do not need.
"""

from __future__ import annotations

from dabench.backends.base import Availability, Backend, TimedWindowCallback
from dabench.core.platforms import backend_names, backend_path, load


def get_backend(name: str) -> type[Backend]:
    path = backend_path(name)
    if path is None:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(backend_names())}")
    return load(path)


__all__ = ["Availability", "Backend", "TimedWindowCallback", "get_backend"]
