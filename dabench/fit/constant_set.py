"""Building constant sets: the published set (:func:`build`, ``fit --cv --write``) and named sets
fitted to measured runs (:func:`build_set`, ``fit --from-mlflow``). The format's reader and writer
is :class:`dabench.perfmodel.constants.ConstantSet`; the format: docs/fitting.md.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from dabench.fit.cv import (
    MEASURES,
    MIN_PLATFORM_POINTS,
    NOMINAL,
    band_q,
    clopper_pearson,
    needs,
    nested_bands,
    score,
    summary,
    wide_score,
)
from dabench.fit.machine import K_FOLD, GroupFit, folds
from dabench.fit.points import load_points
from dabench.fit.refit import measured_classes
from dabench.fit.sources import constant_paths, hardware_yaml, load_sources, read_from_calibration
from dabench.perfmodel import reach
from dabench.perfmodel.constants import DIR, FORMAT, FORMAT_VERSION, PUBLISHED, ConstantSet, model_version, path_of

BAND_METHOD = (
    "leave-one-source-out: a platform's throughput points, each predicted by constants refitted without "
    "its source; a prediction's band is the larger of the split-conformal quantile of those "
    "|log(predicted / published)| and its nearest calibration point's own, plus a growth per unit of "
    "distance from that point (model size, chips, precision, compile and execution mode, release, GPU "
    "generation: dabench/perfmodel/reach.py); nothing calibrated nearby: 'wide', and it says so"
)


def header(name: str, nominal: float, band_method: str = BAND_METHOD) -> dict[str, Any]:
    """The fields every constant set opens with."""
    import dabench

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "created": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "dabench_version": dabench.__version__,
        "nominal_coverage": nominal,
        "band_method": band_method,
    }


def _band_record(kind: str, q: float | None, n: int, rank: int, nominal: float) -> dict[str, Any]:
    """A fitted set's band: ``kind`` as :func:`dabench.fit.cv.band_q` gives it."""
    if kind == "conformal":
        note = (
            f"split-conformal {100 * nominal:.0f}% from {n} out-of-sample residuals "
            f"(rank {rank} of {n}): value / {math.exp(q):.3g} to value x {math.exp(q):.3g}"
        )
    elif kind == "wide":
        note = (
            f"{n} out-of-sample residual(s), too few for a {100 * nominal:.0f}% split-conformal band (rank {rank} "
            f"> {n}); sized by the largest out-of-sample error of {n} points of this fit: "
            f"value / {math.exp(q):.3g} to value x {math.exp(q):.3g}"
        )
    else:  # unbounded
        note = "the conformal rank falls on a refused prediction: no finite band"
    record: dict[str, Any] = {"kind": kind, "n": n, "rank": rank, "nominal_coverage": nominal, "note": note}
    if q is not None:
        record.update(log_half_width=round(q, 6), factor=round(math.exp(q), 6))
    return record


def constant_records(arch: str, unsourced: str) -> dict[str, dict[str, Any]]:
    """Each constant of ``arch``'s hardware config by dotted path, with its provenance record."""

    sources = load_sources(arch)
    constants = {}
    for path, value in constant_paths(hardware_yaml(arch)):
        entry = sources.get(path)
        record: dict[str, Any] = {"value": value, "kind": entry.kind if entry else unsourced}
        if entry is not None:  # a fitted knob's prior: bounds and points, no document; any other: no points
            record.update(
                {
                    k: getattr(entry, k)
                    for k in ("document", "locator", "reason", "bounds", "points")
                    if getattr(entry, k)
                }
            )
        constants[path] = record
    return constants


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else (round(value, 6) if math.isfinite(value) else None)


def _error_summary(in_sample: list[float], out_of_sample: list[float]) -> dict[str, float | None]:
    (med_in, max_in), (med_out, max_out) = summary(in_sample), summary(out_of_sample)
    return {
        "in_sample_median_abs_error": _num(med_in),
        "in_sample_max_abs_error": _num(max_in),
        "out_of_sample_median_abs_error": _num(med_out),
        "out_of_sample_max_abs_error": _num(max_out),
    }


def _reach_record(cv, nominal: float, wide: float) -> dict[str, Any]:
    """A platform's band table: its throughput points' reach coordinates and out-of-source scores."""

    rows = cv.banded if cv else []
    q = reach.conformal_q([r.score for r in rows], nominal)
    record: dict[str, Any] = {"kind": "near" if rows else "wide", "n": len(rows), "nominal_coverage": nominal}
    if q is not None and math.isfinite(q):
        record.update(
            log_half_width=round(q, 6),
            factor=round(math.exp(q), 6),
            note=f"{100 * nominal:.0f}% from {len(rows)} out-of-source errors: value / {math.exp(q):.3g} to "
            f"value x {math.exp(q):.3g} at a calibration point, wider with distance from it",
        )
    else:  # no quantile: the widest out-of-source error of any platform, as where nothing is calibrated
        why = f"{len(rows)} out-of-source errors, too few for a {100 * nominal:.0f}% quantile"
        record.update(
            kind="wide",
            log_half_width=round(wide, 6),
            factor=round(math.exp(wide), 6),
            note=f"{why if rows else 'nothing calibrated on this platform'}: at least value / "
            f"{math.exp(wide):.3g} to value x {math.exp(wide):.3g}, wider with reach",
        )
    record["points"] = [
        {"id": r.point.id, "coords": r.coords, "score": round(r.score, 6) if math.isfinite(r.score) else None}
        for r in rows
    ]
    return record


def build(results: list, archs: list[str], name: str = PUBLISHED, nominal: float = NOMINAL) -> dict[str, Any]:
    """A constant set from :func:`dabench.fit.cv.cross_validate` results with their nested bands
    (:func:`dabench.fit.cv.nested_bands`, set here), and every hardware config in ``archs``."""
    nested_bands(results, nominal)
    banded = [r for cv in results for r in cv.banded]
    covered = sum(bool(r.covered) for r in banded)
    rates = [  # the lowest coverage counts platforms with enough banded points
        sum(bool(r.covered) for r in cv.banded) / len(cv.banded)
        for cv in results
        if len(cv.banded) >= MIN_PLATFORM_POINTS
    ]
    by_arch = {r.arch: r for r in results}
    wide = wide_score(results)
    platforms: dict[str, Any] = {}
    for arch in archs:
        constants = constant_records(arch, "missing")
        cv = by_arch.get(arch)
        entry_out: dict[str, Any] = {
            "model_hash": model_version(arch),
            "calibration_points": sum(1 for p in load_points() if p.platform == arch),
            "throughput_points": len(cv.banded) if cv else 0,
            "fitted_constants": sum(1 for c in constants.values() if c["kind"] == "fitted"),
            "constants": constants,
            "band": _reach_record(cv, nominal, wide),
        }
        if cv is not None and cv.rows:
            k = sum(bool(r.covered) for r in cv.banded)
            interval = clopper_pearson(k, len(cv.banded))
            entry_out["residuals"] = [
                {
                    "point": r.point.id,
                    "metric": r.point.metric,
                    "measure": MEASURES[r.point.metric],
                    "source": r.point.source_key,
                    "use": r.point.use,
                    "published": r.point.published,
                    "in_sample": _num(r.in_sample),
                    "out_of_sample": _num(r.out_of_sample),
                    "error": _num(r.score) if math.isfinite(r.score) else None,
                    "left_out": r.left_out,
                    "band": _num(r.band) if r.band is not None else None,
                    "covered": r.covered,
                }
                for r in cv.rows
            ]
            entry_out.update(
                summary={
                    **_error_summary(cv.abs_errors("in"), cv.abs_errors("out")),
                    "covered": k,
                    "banded": len(cv.banded),
                    "binomial_95": [_num(interval[0]), _num(interval[1])],
                },
                sources=dict(cv.sources),
                read_from_calibration=read_from_calibration(arch),
                refitted_from_prior=cv.freed,
            )
        platforms[arch] = entry_out
    med, worst = summary([e for r in results for e in r.abs_errors("out")])
    lo, hi = clopper_pearson(covered, len(banded))
    return {
        **header(name, nominal),
        "bands": {  # the growth's needs per throughput point (null: infinite) and the wide fallback
            "wide": round(wide, 6),
            "needs": [round(v, 6) if math.isfinite(v) else None for v in sorted(needs(results, nominal).values())],
        },
        "platforms": platforms,
        "cv": {
            "points": sum(len(r.rows) for r in results),
            "banded": len(banded),
            "sources": sum(len(r.sources) for r in results),
            "covered": covered,
            "coverage": _num(covered / len(banded) if banded else math.nan),
            "coverage_min_platform": _num(min(rates) if rates else math.nan),
            "binomial_95": [_num(lo), _num(hi)],
            "out_of_sample_median_abs_error": _num(med),
            "out_of_sample_max_abs_error": _num(worst) if math.isfinite(worst) else "inf",
        },
    }


RUNS_BAND_METHOD = (
    "split-conformal on |log(predicted / measured)| of the fitted set's out-of-sample predictions "
    "(leave one config out, or 10-fold) of the platform's measured runs; fewer than the conformal rank "
    "needs: the largest of them ('wide')"
)


def platform_entry(g: GroupFit, nominal: float = NOMINAL) -> dict[str, Any]:
    """One platform's entry of a constant set (the constant-set format plus this fit's keys)."""
    constants = {
        **constant_records(g.arch, "setting"),
        **{
            f"options.{name}": {
                "value": value,
                "kind": "fitted",
                "bounds": list(g.bounds[name]),
                "points": [p.run_id for p in g.points],
                "before": g.base.get(name),
            }
            for name, value in g.fitted.items()
        },
    }
    scores = [score(g.out_of_sample.get(p.run_id, math.nan), p.published) for p in g.points]
    kind, q = band_q(scores, [], nominal)
    # each point's band as sized from the other points' scores
    q_others = [
        band_q([t for t, r in zip(scores, g.points, strict=True) if r.run_id != p.run_id], [], nominal)[1]
        for p in g.points
    ]
    residuals = [
        {
            "point": p.run_id,
            "metric": "samples_per_s",
            "use": "fit",
            "published": _num(p.published),
            "measured": _num(p.published),
            "config": p.describe,
            "base": _num(g.base_pred.get(p.run_id, math.nan)),
            "in_sample": _num(g.in_sample.get(p.run_id, math.nan)),
            "out_of_sample": _num(g.out_of_sample.get(p.run_id, math.nan)),
            "left_out": bool(g.fitted),
            "covered": q_other is not None and s <= q_other,
            "class_times": p.class_times or None,
        }
        for p, s, q_other in zip(g.points, scores, q_others, strict=True)
    ]
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
        "summary": _error_summary(g._errors(g.in_sample), g._errors(g.out_of_sample)),
        "band": _band_record(kind, q, len(scores), reach.conformal_rank(len(scores), nominal), nominal),
        "comparison": {
            "base": g.base_name,
            "base_median_abs_error": _num(med_pub),
            "base_max_abs_error": _num(max_pub),
            "fitted_out_of_sample_median_abs_error": _num(g.fitted_error),
            "noise_floor": _num(g.noise),
            "noise_floor_method": g.noise_how,
            "out_of_sample_method": "leave one config out"
            if len(folds(g.points)) == len({p.key for p in g.points})
            else f"{K_FOLD}-fold by config",
            "improved": g.improved,
            "covered": sum(r["covered"] for r in residuals),
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
    med, worst = summary(
        [abs(r["out_of_sample"] / r["measured"] - 1) if r["out_of_sample"] else math.inf for r in rows]
    )
    lo, hi = clopper_pearson(covered, len(rows)) if rows else (math.nan, math.nan)
    return {
        **header(name, nominal, RUNS_BAND_METHOD),
        "source": dict(source),
        "platforms": platforms,
        "cv": {
            "points": len(rows),
            "covered": covered,
            "coverage": _num(covered / len(rows)) if rows else None,
            "binomial_95": [_num(lo), _num(hi)],
            "out_of_sample_median_abs_error": _num(med),
            "out_of_sample_max_abs_error": _num(worst),
        },
    }


def write(data: Mapping[str, Any], name: str | None = None) -> Path:
    name = name or data["name"]
    return ConstantSet.write(data, DIR / f"{name}.json" if name == PUBLISHED else path_of(name))
