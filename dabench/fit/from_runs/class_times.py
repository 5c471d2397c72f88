"""Per-class residuals: a run that profiled its op classes contributes one residual per class
beside its throughput residual, so the fit sees how the step splits between compute-bound
(matmul, attention) and memory-bound (elementwise, norm, ...) work, not only its total.

Contract: :func:`measured_classes` is a point's per-class seconds rescaled to its timed step (the
profiled step's class mix times the timed step: a profiler slows every op, the mix is what it
measures), for the op classes the model prices; :func:`class_residuals` the weighted
``log(predicted / measured)`` of each, together weighing as much as the throughput residual
(weight ``1 / sqrt(k)`` each). Pure. Details: docs/fitting.md, "The fit".
"""

from __future__ import annotations

import math
from typing import Mapping

from dabench.fit.from_runs.points import RunPoint
from dabench.workload.opgraph import OP_CLASSES

REFUSED = 10.0  #: residual of a point (or a class) the model refuses while fitting


def measured_classes(p: RunPoint) -> dict[str, float]:
    """Op class -> seconds per timed step (module docstring); {} when the run profiled none."""
    times = {c: float(t) for c, t in (p.class_times or {}).items() if isinstance(t, (int, float)) and t > 0}
    total = sum(times.values())
    if not total or not (p.step_s > 0):
        return {}
    scale = p.step_s / total
    return {c: times[c] * scale for c in OP_CLASSES if c in times}  # 'other' only rescales


def class_residuals(p: RunPoint, predicted: Mapping[str, float] | None) -> list[float]:
    """One weighted residual per measured class of ``p`` (fixed length for a point: the fit's
    residual vector keeps its shape when the model refuses, each then :data:`REFUSED`)."""
    measured = measured_classes(p)
    if not measured:
        return []
    weight = 1.0 / math.sqrt(len(measured))
    out = []
    for c, seconds in measured.items():
        value = (predicted or {}).get(c, 0.0)
        out.append(weight * (math.log(value / seconds) if value > 0 else REFUSED))
    return out
