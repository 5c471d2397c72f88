"""The before/after text of ``dabench fit --from-mlflow``.

Contract: :func:`report` is one platform's text (points used, constants changed old -> new with
bounds, base vs fitted out-of-sample median |error| beside the noise floor, the recommendation);
:func:`last_line` the one-line summary the benchmark parses. Pure.
Details: docs/fitting.md, "The workflow in five commands".
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from dabench.fit.cv import summary
from dabench.fit.from_runs.class_times import measured_classes
from dabench.fit.from_runs.group_fit import K_FOLD, GroupFit, folds


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _pct(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def report(g: GroupFit) -> str:
    """The per-platform text of ``fit --from-mlflow``: points, constants changed (old -> new,
    bounds), base vs fitted out-of-sample error beside the noise floor, the recommendation."""
    lines = [
        f"== {g.arch} [{g.host_key}]: {len(g.points)} points used ({len({p.key for p in g.points})} configs)"
        + (f", {len(g.unusable)} not predictable" if g.unusable else "")
    ]
    for u in g.unusable:
        lines.append(f"  not used: {u.run_id}: {u.reason}")
    profiled = [len(measured_classes(p)) for p in g.points if measured_classes(p)]
    if profiled:
        lines.append(
            f"  per-class times: {len(profiled)} of {len(g.points)} points profiled their op classes "
            f"({sum(profiled)} class residuals beside {len(g.points)} throughput residuals)"
        )
    if not g.fitted:
        lines.append("  constants changed: none (too few configs, or no fittable knob for this platform)")
    else:
        lines.append("  constants changed (old -> new, bounds):")
        for name, value in g.fitted.items():
            lo, hi = g.bounds[name]
            edge = (
                " (at a bound)"
                if math.isclose(value, lo, rel_tol=1e-3, abs_tol=1e-12) or math.isclose(value, hi, rel_tol=1e-3)
                else ""
            )
            lines.append(f"    {name}: {_fmt(g.base.get(name))} -> {_fmt(value)}  [{lo:g}, {hi:g}]{edge}")
    method = "leave one config out" if len(folds(g.points)) == len({p.key for p in g.points}) else f"{K_FOLD}-fold"
    lines.append(
        f"  median |error| on these points, out of sample ({method}): {g.base_name} {_pct(g.published_error)}, "
        f"fitted {_pct(g.fitted_error)} (in sample {_pct(g.in_sample_error)}); noise floor "
        f"{_pct(g.noise)} ({g.noise_how})"
    )
    if g.improved:
        lines.append(
            f"  recommendation: the fitted set (out-of-sample error {_pct(g.published_error)} -> "
            f"{_pct(g.fitted_error)})"
        )
    else:
        lines.append(
            f"  the fit does NOT lower the out-of-sample error: recommendation: keep the {g.base_name} constants"
        )
    return "\n".join(lines)


def last_line(fits: list[GroupFit]) -> str:
    pts = [p for g in fits for p in g.points]
    pub = [e for g in fits for e in g._errors(g.base_pred)]
    fit = [e for g in fits for e in g._errors(g.out_of_sample)]
    floors = [g.noise for g in fits if math.isfinite(g.noise)]
    return (
        f"published_median_abs_error={summary(pub)[0]:.4f} fitted_median_abs_error={summary(fit)[0]:.4f} "
        f"noise_floor={(statistics.median(floors) if floors else math.nan):.4f} points={len(pts)}"
    )
