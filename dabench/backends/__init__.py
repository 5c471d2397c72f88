"""The registry of measured backends: ``hardware.backend`` name -> implementing class.

Entries are dotted paths, imported only when used, so that ``--help`` and predict-mode runs never
import torch or a vendor SDK they do not need.
"""

from __future__ import annotations

import importlib

from dabench.backends.base import Availability, Backend, TimedWindowCallback

BACKENDS: dict[str, str] = {
    "cpu": "dabench.backends.cpu:CpuBackend",
    "cuda": "dabench.backends.cuda:CudaBackend",
    "poptorch": "dabench.backends.ipu:PoptorchBackend",
    "cstorch": "dabench.backends.wse2:CstorchBackend",
    "cstorch_cpu": "dabench.backends.wse2:CstorchCpuBackend",
    "sambaflow": "dabench.backends.rdu:SambaflowBackend",
}


def register_backend(name: str, target: str) -> None:
    """Register ``module.path:ClassName`` under ``name`` (one place per backend)."""
    BACKENDS[name] = target


def get_backend(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    module, _, attr = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


__all__ = ["Availability", "Backend", "BACKENDS", "TimedWindowCallback", "get_backend", "register_backend"]
