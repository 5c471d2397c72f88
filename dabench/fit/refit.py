"""The one solver (:func:`box_least_squares`, bounded least squares) and what it fits: the fitted
knobs of a platform (each declared with its prior, ``knob(prior=...)``: bounds and points.csv rows;
values in conf/hardware/<arch>.yaml) to their points (:func:`refit`), and a platform's fittable
knobs to measured runs (:func:`refit_runs`). Deterministic.

Method: docs/perfmodel.md, "Knobs, sources and calibration"; docs/fitting.md, "The fit".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

from dabench.core.platforms import platform
from dabench.fit.evaluate import predict_point, predict_profile
from dabench.fit.points import Point, load_points
from dabench.fit.sources import constant_paths, fitted, hardware_yaml
from dabench.workload.opgraph import OP_CLASSES

#: residual given to a point (or an op class) the model refuses (NaN) while fitting
REFUSED_RESIDUAL = 10.0
DIFF_STEP = 1e-3  #: finite-difference step of a fit, as a share of each knob's (scaled) bounds
#: of a fit that frees constants from their priors: wider, since those constants (a wafer's
#: per-kernel PE rates, clock, region) move integer PE placements whose steps a 0.1% step falls
#: between, and the solver would stop wherever the machine's BLAS rounding left it
FREED_DIFF_STEP = 1e-2


@dataclass(frozen=True)
class FitResult:
    values: dict[str, float]  #: knob -> fitted value
    before: dict[str, float]  #: knob -> value in the YAML before the fit
    cost: float  #: sum of squared normalised residuals after the fit


def _residuals(points: list[Point], options: dict[str, Any]) -> list[float]:
    values = [predict_point(point, options) for point in points]
    return [
        REFUSED_RESIDUAL if math.isnan(v) else point.error(v) / max(point.tolerance, 1e-9)
        for point, v in zip(points, values, strict=True)
    ]


def _feasibility_fit(points: list[Point], name: str, low: float, high: float, options: dict[str, Any]) -> float:
    """Geometric middle of the values of ``name`` for which every boundary point holds."""

    def ok(value: float, point: Point) -> bool:
        return predict_point(point, {**options, name: value}) == point.published

    # a fits-point bounds the knob from one side, a refused-point from the other: find each edge
    def edge(point: Point) -> tuple[str, float]:
        lo, hi = low, high
        lo_ok, hi_ok = ok(lo, point), ok(hi, point)
        if lo_ok == hi_ok:
            return ("any" if lo_ok else "none"), lo
        for _ in range(40):
            mid = math.sqrt(lo * hi) if lo > 0 else (lo + hi) / 2
            if ok(mid, point) == lo_ok:
                lo = mid
            else:
                hi = mid
        return ("below" if lo_ok else "above"), (lo if lo_ok else hi)

    edges = [(point, *edge(point)) for point in points]
    refused = [point.id for point, side, _ in edges if side == "none"]
    if refused:
        raise ValueError(f"no value of {name} in [{low}, {high}] reproduces point {refused[0]}")
    upper = min([high] + [value for _, side, value in edges if side == "below"])
    lower = max([low] + [value for _, side, value in edges if side == "above"])
    if lower > upper:
        raise ValueError(f"the boundary points of {name} contradict each other ({lower} > {upper})")
    return math.sqrt(lower * upper) if lower > 0 else (lower + upper) / 2


def box_least_squares(
    residuals: Callable[[dict[str, float]], Sequence[float]],
    start: Mapping[str, Any],
    bounds: Mapping[str, tuple[float, float]],
    xtol: float,
    ftol: float,
    max_nfev: int,
    log: Collection[str] = (),
    diff_step: float = DIFF_STEP,
) -> dict[str, float]:
    """The knobs in ``bounds`` that minimise ``residuals(knobs)`` (TRF, each knob scaled to [0, 1]
    of its bounds, of their logarithms for the knobs in ``log``, from ``start`` clipped into them,
    derivatives by steps of ``diff_step`` of that range;
    ``start``'s other knobs held)."""
    from scipy.optimize import least_squares

    names = list(bounds)
    scale = {n: math.log if n in log else float for n in names}
    lows, highs = [scale[n](bounds[n][0]) for n in names], [scale[n](bounds[n][1]) for n in names]

    def from_x(x) -> dict[str, float]:
        out = {n: lo + float(xi) * (hi - lo) for n, xi, lo, hi in zip(names, x, lows, highs, strict=True)}
        return {n: math.exp(v) if n in log else v for n, v in out.items()}

    x0 = [
        min(1.0, max(0.0, (scale[n](float(start[n])) - lo) / (hi - lo)))
        for n, lo, hi in zip(names, lows, highs, strict=True)
    ]
    return from_x(
        least_squares(
            lambda x: residuals({**start, **from_x(x)}),
            x0,
            bounds=(0.0, 1.0),
            method="trf",
            diff_step=diff_step,
            xtol=xtol,
            ftol=ftol,
            max_nfev=max_nfev,
        ).x
    )


def refit(
    arch: str,
    leave_out: frozenset[str] | set[str] = frozenset(),
    start: str = "shipped",
    free: Mapping[str, tuple[float, float]] | None = None,
) -> FitResult:
    """Fit every ``fitted`` knob of ``arch`` without the points ``leave_out``, from the YAML's values
    (``shipped``) or the bounds' middle (``middle``); the YAML is not changed. ``free`` (path ->
    bounds) adds constants fitted from their bounds' middle (geometric beyond a decade) to every
    remaining throughput and allocation point of ``arch`` and to their prior (docs/perfmodel.md,
    "Refit inside the loop")."""
    if start not in ("shipped", "middle"):
        raise ValueError(f"start must be shipped or middle, not {start!r}")
    entries = {path.removeprefix("options."): prior for path, prior in fitted(arch).items()}  # knob -> prior
    every = {p.id: p for p in load_points()}
    by_id = {i: p for i, p in every.items() if i not in leave_out}
    shipped = {path.removeprefix("options."): v for path, v in constant_paths(hardware_yaml(arch))}
    before = {name: float(shipped[name]) for name in entries}
    values = dict(before)
    if start == "middle":
        values.update({name: (e.bounds[0] + e.bounds[1]) / 2 for name, e in entries.items()})
    feasibility = {name: e for name, e in entries.items() if all(every[i].metric == "feasible" for i in e.points)}
    continuous = {name: e for name, e in entries.items() if name not in feasibility}
    bounds = {name: tuple(e.bounds) for name, e in continuous.items()}
    free = {path.removeprefix("options."): b for path, b in (free or {}).items()}
    log = {n for n, (lo, hi) in free.items() if lo > 0 and hi / lo > 10}
    integer = {n for n in free if isinstance(shipped[n], int)}
    before.update({n: shipped[n] for n in free})
    values.update({n: math.sqrt(lo * hi) if n in log else (lo + hi) / 2 for n, (lo, hi) in free.items()})

    remaining = [p.id for p in by_id.values() if p.platform == arch and p.metric in ("samples_per_s", "tokens_per_s")]
    ids = set()
    for e in continuous.values():  # a knob whose listed points are all left out fits what the platform has left
        ids |= {i for i in e.points if i in by_id and by_id[i].use != "excluded"} or set(remaining)
    if free:  # every throughput and allocation point left (excluded ones drop out below)
        ids |= set(remaining) | {i for i, p in by_id.items() if p.platform == arch and p.metric == "allocation_pct"}
    points = [by_id[i] for i in sorted(ids) if by_id[i].use != "excluded"]

    def whole(knobs: dict[str, Any]) -> dict[str, Any]:
        return {**knobs, **{n: round(knobs[n]) for n in integer}}

    def pull(knobs: dict[str, float]) -> list[float]:
        """Each freed constant's distance from its prior's middle (log scale where ``log``): a
        constant at a bound costs what one point at its tolerance costs."""
        shares = [
            math.log(knobs[n] / lo) / math.log(hi / lo) if n in log else (knobs[n] - lo) / (hi - lo)
            for n, (lo, hi) in free.items()
        ]
        return [2 * (share - 0.5) for share in shares]

    if points:  # none left: the knobs keep their start
        fit = box_least_squares(
            lambda knobs: _residuals(points, whole(knobs)) + pull(knobs),
            values,
            {**bounds, **free},
            1e-6,
            1e-8,
            200,
            log,
            diff_step=FREED_DIFF_STEP if free else DIFF_STEP,
        )
        values.update({n: _round(v) for n, v in whole(fit).items()})
    for name, entry in feasibility.items():
        points = [by_id[i] for i in entry.points if i in by_id]
        values[name] = _round(_feasibility_fit(points, name, *entry.bounds, dict(values)))
    all_points = [by_id[i] for e in entries.values() for i in e.points if i in by_id and by_id[i].use != "excluded"]
    return FitResult(values, before, sum(r * r for r in _residuals(all_points, values)))


def _round(value: float) -> float:
    """Four significant digits (what the YAML stores)."""
    return float(f"{value:.4g}")


def measured_classes(p: Point) -> dict[str, float]:
    """Op class -> seconds per timed step (module docstring); {} when the run profiled none."""
    times = {c: float(t) for c, t in (p.class_times or {}).items() if isinstance(t, (int, float)) and t > 0}
    total = sum(times.values())
    if not total or not (p.step_s > 0):
        return {}
    scale = p.step_s / total
    return {c: times[c] * scale for c in OP_CLASSES if c in times}  # 'other' only rescales


def class_residuals(p: Point, predicted: Mapping[str, float] | None) -> list[float]:
    """One weighted residual per measured class of ``p`` (:data:`REFUSED_RESIDUAL` when refused)."""
    measured = measured_classes(p)
    if not measured:
        return []
    weight = 1.0 / math.sqrt(len(measured))
    got = predicted or {}
    return [
        weight * (math.log(got[c] / seconds) if got.get(c, 0.0) > 0 else REFUSED_RESIDUAL)
        for c, seconds in measured.items()
    ]


EMULATED = ("emulated_compute_efficiency", "emulated_memory_efficiency")


def fittable(arch: str, points: list[Point]) -> dict[str, tuple[float, float]]:
    """knob -> bounds the fit moves for ``arch`` given ``points`` (fewer knobs than distinct configs)."""

    if platform(arch).fit_bounds:  # models whose shipped values are not fitted to points.csv (cpu, cuda)
        bounds = dict(platform(arch).fit_bounds)
        if platform(arch).host_cpu and all(p.native for p in points):
            bounds = {k: v for k, v in bounds.items() if k not in EMULATED}  # nothing pins them
    else:
        bounds = {path.removeprefix("options."): e.bounds for path, e in fitted(arch).items()}
    return dict(list(bounds.items())[: max(0, len({p.key for p in points}) - 1)])


def run_residuals(points: list[Point], options: Mapping[str, Any], classes: bool = True) -> list[float]:
    """Per point ``log(predicted / measured)`` samples/s and, with ``classes``, its class residuals."""
    out = []
    for p in points:
        profile = predict_profile(p, options)
        value = float(profile.samples_per_s) if profile is not None else math.nan
        out.append(REFUSED_RESIDUAL if not (value > 0) else math.log(value / p.published))
        if classes:
            out += class_residuals(p, profile.class_times_s if profile is not None and value > 0 else None)
    return out


def refit_runs(
    points: list[Point],
    bounds: Mapping[str, tuple[float, float]],
    start: Mapping[str, Any],
    classes: bool = True,
) -> dict[str, float]:
    """The knobs in ``bounds`` fitted to ``points`` from ``start``; {} when there is nothing to fit."""

    if not bounds or not points:
        return {}
    fit = box_least_squares(lambda knobs: run_residuals(points, knobs, classes), start, bounds, 1e-5, 1e-6, 60)
    return {n: _round(v) for n, v in fit.items()}
