"""The fit itself: which knobs a fit from runs may move, and their bounded least-squares refit.

Contract: :func:`fittable` gives knob -> bounds for a platform and its points (always fewer knobs
than distinct configs); :func:`refit` returns the knobs fitted to prepared points (bounded least
squares on log(predicted / measured) samples/s, plus per-class residuals where runs profiled their
op classes; deterministic), {} when there is nothing to fit.
Details: docs/fitting.md, "The fit".
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from dabench.fit.from_runs.class_times import REFUSED, class_residuals
from dabench.fit.from_runs.points import RunPoint
from dabench.fit.from_runs.predict import predict_profile
from dabench.fit.refit import box_least_squares
from dabench.fit.sources import fitted

#: bounds of the knobs a fit from runs may move, for the models whose shipped values are not
#: fitted to points.csv (cpu: its own-measurement fit; cuda: estimates). Vendor models: their
#: ``fitted`` entries of conf/hardware/sources/<arch>.yaml. Order = priority when points are few.
FIT_BOUNDS: dict[str, dict[str, tuple[float, float]]] = {
    # compute_efficiency is 1.0 by construction on a quiet machine (the calibrated peak is a large
    # matmul's rate); measured runs of a busy or different machine move it too
    "cpu": {
        "launch_s": (1e-6, 1e-3),
        "memory_efficiency": (0.02, 1.0),
        "compute_efficiency": (0.02, 1.0),
        "emulated_compute_efficiency": (0.01, 1.0),
        "emulated_memory_efficiency": (0.01, 1.0),
        "matmul_half_flops": (0.0, 2e8),
    },
    "cuda": {"compute_efficiency": (0.05, 1.0), "memory_efficiency": (0.05, 1.0), "launch_s": (1e-7, 1e-4)},
}
EMULATED = ("emulated_compute_efficiency", "emulated_memory_efficiency")


def fittable(arch: str, points: list[RunPoint]) -> dict[str, tuple[float, float]]:
    """knob -> bounds the fit moves for ``arch`` given ``points`` (fewer knobs than distinct configs)."""

    if arch in FIT_BOUNDS:
        bounds = dict(FIT_BOUNDS[arch])
        if arch == "cpu" and all(p.native for p in points):
            bounds = {k: v for k, v in bounds.items() if k not in EMULATED}  # nothing pins them
    else:
        bounds = {
            path.split(".", 1)[1]: tuple(e.bounds)
            for path, e in fitted(arch).items()
            if path.startswith("options.") and e.bounds
        }
    configs = len({p.key for p in points})
    return dict(list(bounds.items())[: max(0, configs - 1)])


def residuals(points: list[RunPoint], options: Mapping[str, Any], classes: bool = True) -> list[float]:
    """Per point ``log(predicted / measured)`` samples/s and, with ``classes``, its per-class
    residuals where the run profiled them (:mod:`.class_times`); :data:`REFUSED` where the model
    refuses."""
    out = []
    for p in points:
        profile = predict_profile(p, options)
        value = float(profile.samples_per_s) if profile is not None else math.nan
        out.append(REFUSED if not (value > 0) else math.log(value / p.samples_per_s))
        if classes:
            out += class_residuals(p, profile.class_times_s if profile is not None and value > 0 else None)
    return out


def refit(
    points: list[RunPoint],
    bounds: Mapping[str, tuple[float, float]],
    start: Mapping[str, Any],
    classes: bool = True,
) -> dict[str, float]:
    """The knobs in ``bounds`` fitted to ``points`` (bounded least squares on :func:`residuals`:
    log throughput ratios and, with ``classes``, the per-class ones; from ``start`` clipped into
    the bounds); {} when there is nothing to fit."""

    if not bounds or not points:
        return {}
    fit = box_least_squares(lambda knobs: residuals(points, knobs, classes), start, bounds, 1e-5, 1e-6, 60)
    return {n: float(f"{v:.4g}") for n, v in fit.items()}
