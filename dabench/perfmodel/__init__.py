"""Analytical performance models: ``hardware.arch`` -> a function predicting a Profile.

A predictor has the signature ``predict(rc: RunConfig, graph: OpGraph) -> Profile`` and returns
a Profile with ``mode="predict"``; it raises :class:`~dabench.core.status.CapacityError` when the
workload cannot fit. A predictor that prices against the run's ceilings (CPU/GPU rooflines) sets
``predict.takes_ceilings = True`` and is called as ``predict(rc, graph, ceilings)``, so validate
mode can hand it the ceilings probed around the measured run. Entries are dotted paths imported on
first use.
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
