"""Analytical performance models: ``hardware.arch`` -> a function predicting a Profile.

Every predictor has the signature ``predict(rc: RunConfig, graph: OpGraph, ceilings: Ceilings)
-> Profile`` and returns a Profile with ``mode="predict"``; it raises
:class:`~dabench.core.status.CapacityError` when the workload cannot fit. ``ceilings`` are what
the run's ops are priced at: the resolved ones (:func:`dabench.host.ceilings.resolve_ceilings`),
or in validate mode on the CPU those probed around the measured run. The roofline models (CPU/GPU)
price against them; the dataflow models (IPU, RDU, WSE-2) read their own spec and ignore them.
Entries are dotted paths imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Callable

PREDICTORS: dict[str, str] = {
    "cpu": "dabench.perfmodel.device:predict",
    "cuda": "dabench.perfmodel.device:predict",
    "ipu": "dabench.perfmodel.ipu:predict",
    "rdu": "dabench.perfmodel.rdu:predict",
    "wse2": "dabench.perfmodel.wse2:predict",
}


def register_predictor(arch: str, target: str) -> None:
    """Register ``module.path:function`` as the predictor for ``arch``."""
    PREDICTORS[arch] = target


def get_predictor(arch: str) -> Callable:
    if arch not in PREDICTORS:
        raise KeyError(f"no analytical model for hardware.arch={arch!r}; models exist for: "
                       f"{', '.join(sorted(PREDICTORS)) or 'none yet'}")
    module, _, attr = PREDICTORS[arch].partition(":")
    return getattr(importlib.import_module(module), attr)
