"""What the analytical models of every platform share (roofline pricing, collectives, pipeline
maths, capacity, bands); ``hardware.arch`` -> its platform record's ``predict`` (dabench/platforms/).

Every predictor is ``predict(rc, graph, ceilings) -> Profile(mode="predict")`` and raises
CapacityError when the workload cannot fit. The roofline models (cpu, cuda) price the ops at
``ceilings``; the dataflow models (ipu, rdu, wse2) read their own spec and ignore them.
"""

from __future__ import annotations

from typing import Callable

from dabench.core.platforms import platform, registry


def has_model(arch: str) -> bool:
    return platform(arch).predict is not None


def get_predictor(arch: str) -> Callable:
    if not has_model(arch):
        raise KeyError(
            f"no analytical model for hardware.arch={arch!r}; models exist for: "
            f"{', '.join(sorted(a for a in registry() if has_model(a))) or 'none yet'}"
        )
    return platform(arch).predict
