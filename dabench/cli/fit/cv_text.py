"""``dabench fit --cv``: the leave-one-out cross-validation of the public points, its text and its
docs/perfmodel.md block, and ``--cv --write`` (the published constant set).

Contract: :func:`run_cv` cross-validates the platforms, prints :func:`cv_report` (its last line is
:func:`cv_last_line`) and, with ``write``, saves published.json (every platform needed);
:func:`cv_markdown` renders a constant set's block. Method: dabench/perfmodel/fit/cv.py
(docs/perfmodel.md, "Out-of-sample error and bands").
"""

from __future__ import annotations

import math
import sys

from dabench.cli.fit.tables import BEGIN, END, fmt, platforms

CV_BLOCK = "cv"  #: the docs block of the out-of-sample tables (from the published constant set)


def _pct(value) -> str:
    return "refused" if value is None else f"{100 * value:.1f}%"


def _signed(row: dict, key: str) -> str:
    value = row[key]
    return "refused" if value is None else f"{100 * (value - row['published']) / row['published']:+.1f}%"


def _goal(summary: dict) -> str:
    from dabench.perfmodel.fit.cv import GOAL_MAX, GOAL_MEDIAN

    med, worst = summary["out_of_sample_median_abs_error"], summary["out_of_sample_max_abs_error"]
    missed = []
    if med is None or med > GOAL_MEDIAN:
        missed.append(f"median {_pct(med)} > {100 * GOAL_MEDIAN:.0f}%")
    if worst is None or worst > GOAL_MAX:
        missed.append(f"max {_pct(worst)} > {100 * GOAL_MAX:.0f}%")
    return "met" if not missed else "NOT met (" + ", ".join(missed) + ")"


def _few(entry: dict) -> str:
    from dabench.perfmodel.fit.cv import FEW_POINTS

    n = entry["throughput_points"]
    return f"only {n} throughput points (fewer than {FEW_POINTS}): every number rests on them" if n < FEW_POINTS else ""


def _value(row: dict, key: str) -> str:
    return fmt(math.nan if row[key] is None else row[key])


def cv_last_line(data: dict) -> str:
    cv = data["cv"]
    return (
        f"out_of_sample_median_abs_error={cv['out_of_sample_median_abs_error']:.4f} "
        f"out_of_sample_max_abs_error={cv['out_of_sample_max_abs_error']:.4f} "
        f"band_coverage={cv['coverage']:.4f} points={cv['points']}"
    )


def cv_coverage_line(data: dict) -> str:
    cv, nominal = data["cv"], data["nominal_coverage"]
    lo, hi = cv["binomial_95"]
    inside = "contains" if lo <= nominal <= hi else "does NOT contain"
    return (
        f"band coverage (nested: each point's band sized without it; pooled over platforms): "
        f"{cv['covered']}/{cv['points']} = {cv['coverage']:.3f}, Clopper-Pearson 95% [{lo:.3f}, {hi:.3f}] "
        f"{inside} the nominal {nominal:.2f}"
    )


def cv_report(data: dict) -> str:
    """The text of ``fit --cv``: per platform the points, fitted constants, in- and out-of-sample
    |error|, the goal and the band; then the pooled coverage; the last line is the summary."""
    out = []
    for arch, entry in data["platforms"].items():
        out.append(
            f"\n== {arch} (model version {entry['model_hash']}): {entry['throughput_points']} throughput points "
            f"of {entry['calibration_points']} calibration points, {entry['fitted_constants']} fitted constants"
        )
        if not entry.get("residuals"):
            out.append(f"band: {entry['band']['kind']}: {entry['band']['note']}")
            continue
        names = [p.split(".", 1)[1] for p, c in entry["constants"].items() if c["kind"] == "fitted"]
        out.append("fitted: " + (", ".join(names) or "none"))
        if entry["fitted_constants"] >= entry["calibration_points"]:
            out.append(
                f"VIOLATION: {entry['fitted_constants']} fitted constants for {entry['calibration_points']} points"
            )
        if _few(entry):
            out.append(_few(entry))
        out.append(
            f"{'point':<14} {'use':<9} {'published':>10} {'in-sample':>10} {'error':>8} {'left out':>10} "
            f"{'error':>8}  nested band"
        )
        for row in entry["residuals"]:
            out.append(
                f"{row['point']:<14} {row['use']:<9} {fmt(row['published']):>10} {_value(row, 'in_sample'):>10} "
                f"{_signed(row, 'in_sample'):>8} {_value(row, 'out_of_sample'):>10} "
                f"{_signed(row, 'out_of_sample'):>8}  {'covers' if row['covered'] else 'MISSES'}"
            )
        sm = entry["summary"]
        out.append(
            f"|error| in sample: median {_pct(sm['in_sample_median_abs_error'])}, "
            f"max {_pct(sm['in_sample_max_abs_error'])}; out of sample: median "
            f"{_pct(sm['out_of_sample_median_abs_error'])}, max {_pct(sm['out_of_sample_max_abs_error'])}"
        )
        out.append(f"goal (out of sample, median <= 15%, max <= 35%): {_goal(sm)}")
        out.append(f"band: {entry['band']['kind']}: {entry['band']['note']}")
    out += ["", cv_coverage_line(data), cv_last_line(data)]
    return "\n".join(out)


def cv_markdown(data: dict) -> str:
    """The docs/perfmodel.md block generated from a constant set (``--markdown`` / ``--update-doc``)."""
    out = [
        BEGIN.format(arch=CV_BLOCK),
        "",
        f"Generated by `python -m dabench fit --update-doc` from the constant set `{data['name']}` "
        f"(dabench/perfmodel/fit/{data['name']}.json, written by `python -m dabench fit --cv --write`). "
        f"Throughput points only; excluded points count at their error.",
        "",
        "| platform | throughput points | calibration points | fitted constants | in-sample median / max "
        "abs. error | out-of-sample median / max | goal (15% / 35%) | band (80%) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for arch, entry in data["platforms"].items():
        band = entry["band"]
        width = (
            f"x/{band['factor']:.3g} to x{band['factor']:.3g} ({band['kind']}, n={band['n']})"
            if band.get("factor")
            else f"{band['kind']}: {band['note']}"
        )
        sm = entry.get("summary")
        if sm:
            cells = (
                f"{_pct(sm['in_sample_median_abs_error'])} / {_pct(sm['in_sample_max_abs_error'])}",
                f"{_pct(sm['out_of_sample_median_abs_error'])} / {_pct(sm['out_of_sample_max_abs_error'])}",
                _goal(sm) + (f"; {_few(entry)}" if _few(entry) else ""),
            )
        else:
            cells = ("-", "-", "not measurable: no calibration points")
        out.append(
            f"| {arch} | {entry['throughput_points']} | {entry['calibration_points']} | "
            f"{entry['fitted_constants']} | {cells[0]} | {cells[1]} | {cells[2]} | {width} |"
        )
    out += [
        "",
        "| point | platform | use | published | in-sample | error | left out | error | nested band |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arch, entry in data["platforms"].items():
        for row in entry.get("residuals") or ():
            out.append(
                f"| {row['point']} | {arch} | {row['use']} | {fmt(row['published'])} | {_value(row, 'in_sample')} | "
                f"{_signed(row, 'in_sample')} | {_value(row, 'out_of_sample')} | {_signed(row, 'out_of_sample')} | "
                f"{'covers' if row['covered'] else 'misses'} |"
            )
    out += ["", cv_coverage_line(data) + ".", "", "`" + cv_last_line(data) + "`", "", END.format(arch=CV_BLOCK)]
    return "\n".join(out)


def run_cv(archs: list[str], write: bool) -> int:
    from dabench.perfmodel.fit import constant_set
    from dabench.perfmodel.fit.cv import cross_validate, nested_coverage
    from dabench.perfmodel.fit.sources import CONF_HARDWARE

    if write and sorted(archs) != sorted(platforms()):
        raise SystemExit("--cv --write needs every platform with points (each band's fallback pools all of them)")
    results = [cross_validate(arch, log=lambda m: print(m, file=sys.stderr, flush=True)) for arch in archs]
    hardware = list(archs) + sorted(p.stem for p in CONF_HARDWARE.glob("*.yaml") if p.stem not in archs)
    data = constant_set.build(results, nested_coverage(results), hardware)
    print(cv_report(data))
    if write:
        print(f"wrote {constant_set.write(data)}", file=sys.stderr)
    return 0
