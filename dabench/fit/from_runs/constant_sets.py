"""A fit from runs written in the constant-set format (dabench/fit/constant_set.py), with
the fit's own keys (host key, comparison, recommendation, domain, left out).

Contract: :func:`platform_entry` is one platform's entry of a :class:`.GroupFit`; :func:`build_set`
the whole set from one fit per platform and the source (store, selection, run ids). Pure.
Details: docs/fitting.md, "What a constant set contains".
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from dabench.fit import constant_set
from dabench.fit.constant_set import _band_record, constant_records
from dabench.fit.cv import NOMINAL, band_q, clopper_pearson, conformal_rank, summary
from dabench.fit.from_runs.class_times import measured_classes
from dabench.fit.from_runs.group_fit import K_FOLD, GroupFit, folds

BAND_METHOD = (
    "split-conformal on |log(predicted / measured)| of the fitted set's out-of-sample predictions "
    "(leave one config out, or 10-fold) of the platform's measured runs; fewer than the conformal rank "
    "needs: the largest of them ('wide')"
)


def _n(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 6)


def platform_entry(g: GroupFit, nominal: float = NOMINAL) -> dict[str, Any]:
    """One platform's entry of a constant set (the constant-set format plus this fit's keys)."""
    from dabench.perfmodel.constants import model_version

    constants = constant_records(g.arch, "setting")
    for name, value in g.fitted.items():
        constants[f"options.{name}"] = {
            "value": value,
            "kind": "fitted",
            "bounds": list(g.bounds[name]),
            "points": [p.run_id for p in g.points],
            "before": g.base.get(name),
        }
    scores = g.scores()
    kind, q = band_q(scores, [], nominal)
    band = _band_record(kind, q, len(scores), conformal_rank(len(scores), nominal), nominal, len(scores))
    if kind == "wide":
        band["note"] = band["note"].replace("of every platform", "of this fit")
    residuals = []
    covered = 0
    for p, s in zip(g.points, scores, strict=True):
        others = [t for t, r in zip(scores, g.points, strict=True) if r.run_id != p.run_id]
        _, q_other = band_q(others, [], nominal)
        hit = q_other is not None and s <= q_other
        covered += hit
        residuals.append(
            {
                "point": p.run_id,
                "metric": "samples_per_s",
                "use": "fit",
                "published": _n(p.samples_per_s),
                "measured": _n(p.samples_per_s),
                "config": p.describe,
                "base": _n(g.base_pred.get(p.run_id, math.nan)),
                "in_sample": _n(g.in_sample.get(p.run_id, math.nan)),
                "out_of_sample": _n(g.out_of_sample.get(p.run_id, math.nan)),
                "left_out": bool(g.fitted),
                "covered": hit,
                "class_times": p.class_times or None,
            }
        )
    med_in, max_in = summary(g._errors(g.in_sample))
    med_out, max_out = summary(g._errors(g.out_of_sample))
    med_pub, max_pub = summary(g._errors(g.base_pred))
    return {
        "model_hash": model_version(g.arch),
        "host_key": g.host_key,
        "calibration_points": len(g.points),
        "throughput_points": len(g.points),
        "class_time_points": sum(1 for p in g.points if measured_classes(p)),
        "fitted_constants": len(g.fitted),
        "constants": constants,
        "residuals": residuals,
        "summary": {
            "in_sample_median_abs_error": _n(med_in),
            "in_sample_max_abs_error": _n(max_in),
            "out_of_sample_median_abs_error": _n(med_out),
            "out_of_sample_max_abs_error": _n(max_out),
        },
        "band": band,
        "comparison": {
            "base": g.base_name,
            "base_median_abs_error": _n(med_pub),
            "base_max_abs_error": _n(max_pub),
            "fitted_out_of_sample_median_abs_error": _n(med_out),
            "noise_floor": _n(g.noise),
            "noise_floor_method": g.noise_how,
            "out_of_sample_method": "leave one config out"
            if len(folds(g.points)) == len({p.key for p in g.points})
            else f"{K_FOLD}-fold by config",
            "improved": g.improved,
            "covered": covered,
        },
        "recommendation": g.recommendation,
        "domain": g.domain(),
        "left_out": [{"run_id": u.run_id, "reason": u.reason} for u in g.unusable],
    }


def build_set(name: str, fits: list[GroupFit], source: Mapping[str, Any], nominal: float = NOMINAL) -> dict[str, Any]:
    """A constant set (the format of :mod:`.constant_set`) from fits of one machine per platform."""

    platforms = {g.arch: platform_entry(g, nominal) for g in fits}
    rows = [r for e in platforms.values() for r in e["residuals"]]
    covered = sum(bool(r["covered"]) for r in rows)
    errors = [abs(r["out_of_sample"] / r["measured"] - 1) if r["out_of_sample"] else math.inf for r in rows]
    med, worst = summary(errors)
    lo, hi = clopper_pearson(covered, len(rows)) if rows else (math.nan, math.nan)
    return {
        **constant_set.header(name, nominal, BAND_METHOD),
        "source": dict(source),
        "platforms": platforms,
        "cv": {
            "points": len(rows),
            "covered": covered,
            "coverage": _n(covered / len(rows)) if rows else None,
            "binomial_95": [_n(lo), _n(hi)],
            "out_of_sample_median_abs_error": _n(med),
            "out_of_sample_max_abs_error": _n(worst),
        },
    }
