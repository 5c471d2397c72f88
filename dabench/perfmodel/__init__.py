"""Analytical performance models: ``hardware.arch`` -> a predictor (a dotted path, imported on first use).

Every predictor is ``predict(rc, graph, ceilings) -> Profile(mode="predict")`` and raises
CapacityError when the workload cannot fit. The roofline models (cpu, cuda) price the ops at
``ceilings``; the dataflow models (ipu, rdu, wse2) read their own spec and ignore them.
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


def get_predictor(arch: str) -> Callable:
    if arch not in PREDICTORS:
        raise KeyError(
            f"no analytical model for hardware.arch={arch!r}; models exist for: "
            f"{', '.join(sorted(PREDICTORS)) or 'none yet'}"
        )
    module, _, attr = PREDICTORS[arch].partition(":")
    return getattr(importlib.import_module(module), attr)
