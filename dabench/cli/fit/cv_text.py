"""``dabench fit --cv``: :func:`run_cv` cross-validates the public points leaving one source out,
prints :func:`cv_report` (each fitted constant's distance from its prior's bounds, one
:func:`cv_platform_line` per platform, last line :func:`cv_last_line`) and, with ``write``, saves
published.json.
The helpers also render ``dabench docs``' out-of-source block. Method: docs/perfmodel.md,
"Out-of-sample error and bands".
"""

from __future__ import annotations

import math
import statistics
import sys

from dabench.cli.fit.published import fmt, platforms
from dabench.core.platforms import platform
from dabench.core.status import ConfigError
from dabench.fit import constant_set
from dabench.fit.cv import (
    AT_BOUND,
    FEW_POINTS,
    GOAL_MAX,
    GOAL_MEDIAN,
    BoundDistance,
    bound_distances,
    cross_validate,
    summary,
)
from dabench.fit.sources import CONF_HARDWARE, hardware_yaml
from dabench.host import validation

CV_BLOCK = "cv"  #: the docs block of the out-of-sample tables (dabench docs)


def pct(value) -> str:
    return "refused" if value is None else f"{100 * value:.1f}%"


def signed(row: dict, key: str) -> str:
    value = row[key]
    return "refused" if value is None else f"{100 * (value - row['published']) / row['published']:+.1f}%"


def goal(summary: dict) -> str:
    med, worst = summary["out_of_sample_median_abs_error"], summary["out_of_sample_max_abs_error"]
    missed = [f"median {pct(med)} > {100 * GOAL_MEDIAN:.0f}%"] if med is None or med > GOAL_MEDIAN else []
    missed += [f"max {pct(worst)} > {100 * GOAL_MAX:.0f}%"] if worst is None or worst > GOAL_MAX else []
    return "met" if not missed else "NOT met (" + ", ".join(missed) + ")"


def few(entry: dict) -> str:
    n = entry["throughput_points"]
    return f"only {n} throughput points (fewer than {FEW_POINTS}): every number rests on them" if n < FEW_POINTS else ""


def value(row: dict, key: str) -> str:
    return fmt(math.nan if row[key] is None else row[key])


def constants_at_bound(data: dict) -> int:
    """How many fitted constants of the cross-validated platforms sit at a bound of their prior (:data:`AT_BOUND`)."""
    cross_validated = (e for e in data["platforms"].values() if e.get("residuals"))
    return sum(d.at_bound for e in cross_validated for d in bound_distances(e["constants"]))


def bound_line(d: BoundDistance) -> str:
    """One fitted constant's place in its prior: ``options.x=0.2 in [0.2, 1] (linear): ...``."""
    mark = f"  AT BOUND (within {100 * AT_BOUND:.0f}% of the range)" if d.at_bound else ""
    return (
        f"  prior of {d.path.split('.', 1)[1]}={d.value:.4g} in [{d.bounds[0]:.4g}, {d.bounds[1]:.4g}] "
        f"({'log10' if d.log else 'linear'}): {100 * d.low:.1f}% of the range from the low bound, "
        f"{100 * d.high:.1f}% from the high{mark}"
    )


def cv_platform_line(arch: str, entry: dict) -> str:
    """``cv platform=<arch> n= median= max= coverage= width=``: the out-of-source median and max
    |relative error| of its throughput points, their nested bands' coverage and median hi/lo."""
    rows = [r for r in entry.get("residuals") or () if r["measure"] == "|log ratio|"]
    errors = [math.inf if r["out_of_sample"] is None else abs(r["out_of_sample"] / r["published"] - 1) for r in rows]
    banded = [r for r in rows if r["band"] is not None]
    coverage = sum(bool(r["covered"]) for r in banded) / len(banded) if banded else math.nan
    width = statistics.median(math.exp(2 * r["band"]) for r in banded) if banded else math.nan
    med, worst = summary(errors)
    return (
        f"cv platform={arch} n={len(rows)} median={med:.4f} max={worst:.4f} coverage={coverage:.4f} width={width:.4f}"
    )


def cv_last_line(data: dict) -> str:
    cv = data["cv"]

    def num(key: str) -> str:
        value = cv[key]
        return "nan" if value is None else ("inf" if value == "inf" else f"{value:.4f}")

    return (
        f"out_of_sample_median_abs_error={num('out_of_sample_median_abs_error')} "
        f"out_of_sample_max_abs_error={num('out_of_sample_max_abs_error')} "
        f"band_coverage={num('coverage')} band_coverage_min_platform={num('coverage_min_platform')} "
        f"sources={cv['sources']} points={cv['points']} constants_at_bound={constants_at_bound(data)}"
    )


def _coverage(covered: int, banded: int, rate: float, interval: list, nominal: float) -> str:
    lo, hi = interval
    inside = "contains" if lo <= nominal <= hi else "does NOT contain"
    return (
        f"{covered}/{banded} = {rate:.3f}, Clopper-Pearson 95% [{lo:.3f}, {hi:.3f}] {inside} the nominal {nominal:.2f}"
    )


def cv_coverage_line(data: dict) -> str:
    cv = data["cv"]
    return "band coverage (nested: each throughput point's band sized without its source; pooled): " + _coverage(
        cv["covered"], cv["banded"], cv["coverage"], cv["binomial_95"], data["nominal_coverage"]
    )


def error_text(row: dict) -> str:
    """A row's out-of-source error in its metric's own measure."""
    if row["out_of_sample"] is None:
        return "refused"
    if row["measure"] == "|log ratio|":
        return signed(row, "out_of_sample")
    if row["measure"] == "wrong":
        return "right" if row["error"] == 0 else "WRONG"
    return f"{row['out_of_sample'] - row['published']:+.1f} pts"


def _source_line(key: str, rows: list[dict]) -> str:
    banded = [r for r in rows if r["measure"] == "|log ratio|"]
    errors = [math.inf if r["out_of_sample"] is None else abs(r["out_of_sample"] / r["published"] - 1) for r in banded]
    worst = f"max |error| {pct(max(errors))}" if errors and math.isfinite(max(errors)) else ""
    cover = f", band covers {sum(1 for r in banded if r['covered'])}/{len(banded)}" if banded else ""
    refit = "refitted without it" if any(r["left_out"] for r in rows) else "no fit saw it"
    return f"  source {key}: {len(rows)} points, {refit}" + (f"; {worst}" if worst else "") + cover


def _family(arch: str, entries: dict) -> str:
    """The calibrated platform whose bands a preset's runs use (``arch`` itself when none is)."""
    spec = hardware_yaml(arch)
    base = spec.get("arch") or next((d for d in spec.get("defaults") or () if d in entries), arch)
    return (
        arch
        if base == arch or base not in entries
        else (base if entries[base].get("residuals") else _family(base, entries))
    )


def cv_report(data: dict) -> str:
    """The text of ``fit --cv``: per platform its fitted constants, every point's in-sample and
    out-of-source error (in its own measure) and nested band, per source its errors and coverage,
    the platform's coverage; then the pooled coverage; the last line is the summary."""
    out = []
    nominal = data["nominal_coverage"]
    for arch, entry in data["platforms"].items():
        out.append(
            f"\n== {arch} (model version {entry['model_hash']}): {entry['calibration_points']} calibration points "
            f"({entry['throughput_points']} throughput) from {len(entry.get('sources') or ())} sources, "
            f"{entry['fitted_constants']} fitted constants"
        )
        if not entry.get("residuals"):
            base = _family(arch, data["platforms"])
            own = [p for p in data["platforms"][base]["band"].get("points") or () if arch in p["coords"].values()]
            if base != arch and own:  # a preset (cuda_a100) with points: its runs use its arch's bands
                out.append(f"band: {base}'s: a {base} preset, predicted with the {base} calibration above")
            elif base != arch:
                out.append(
                    f"band: wide: nothing calibrated nearby: no calibration point runs this {base} preset; "
                    f"its numbers come from its specs and the {base} family's mechanisms"
                )
            elif platform(arch).host_cpu:  # priced at the calibration of the machine it runs on
                grid, record = validation.shipped()
                out.append(
                    f"band: sized where it runs, from that machine's validate errors once 4 give a quantile, "
                    f"until then from {len(grid)} errors of {validation.GRID} on {record.get('machine')} "
                    f"(dabench/platforms/cpu/{validation.SHIPPED.name}), one unit away on another machine"
                )
            else:
                out.append(f"band: {entry['band']['kind']}: {entry['band']['note']}")
            continue
        names = [p.split(".", 1)[1] for p, c in entry["constants"].items() if c["kind"] == "fitted"]
        out += ["fitted: " + (", ".join(names) or "none"), *map(bound_line, bound_distances(entry["constants"]))]
        if entry["fitted_constants"] >= entry["calibration_points"]:
            out.append(
                f"VIOLATION: {entry['fitted_constants']} fitted constants for {entry['calibration_points']} points"
            )
        if few(entry):
            out.append(few(entry))
        out.append(
            f"{'point':<18} {'metric':<16} {'use':<9} {'published':>10} {'in-sample':>10} {'out of src':>10} "
            f"{'error':>9}  nested band"
        )
        for row in entry["residuals"]:
            band = (
                ""
                if row["band"] is None
                else f"x/{math.exp(row['band']):.3g} {'covers' if row['covered'] else 'MISSES'}"
            )
            out.append(
                f"{row['point']:<18} {row['metric']:<16} {row['use']:<9} {fmt(row['published']):>10} "
                f"{value(row, 'in_sample'):>10} {value(row, 'out_of_sample'):>10} {error_text(row):>9}  {band}"
            )
        sources = dict.fromkeys(row["source"] for row in entry["residuals"])
        out += [_source_line(key, [r for r in entry["residuals"] if r["source"] == key]) for key in sources]
        sm = entry["summary"]
        out += [
            f"throughput |error| in sample: median {pct(sm['in_sample_median_abs_error'])}, "
            f"max {pct(sm['in_sample_max_abs_error'])}; out of source: median "
            f"{pct(sm['out_of_sample_median_abs_error'])}, max {pct(sm['out_of_sample_max_abs_error'])}",
            f"goal (out of source, median <= 15%, max <= 35%): {goal(sm)}",
            "band coverage: "
            + _coverage(sm["covered"], sm["banded"], sm["covered"] / sm["banded"], sm["binomial_95"], nominal)
            if sm["banded"]
            else "band coverage: no throughput points",
        ]
        freed = entry.get("refitted_from_prior") or {}
        out += [
            f"refitted from its prior without {k}: {', '.join(p.split('.', 1)[1] for p in ps)}"
            for k, ps in freed.items()
        ]
        tied = {p: k for p, k in (entry.get("read_from_calibration") or {}).items() if p not in freed.get(k, ())}
        out += [
            f"fixed from a calibration source, not refitted (that source's out-of-source error is optimistic): "
            f"{', '.join(p.split('.', 1)[1] for p, k in tied.items() if k == key)} <- {key}"
            for key in dict.fromkeys(tied.values())
        ]
        out.append(f"band: {entry['band']['note']}")
    out += ["", *(cv_platform_line(a, e) for a, e in data["platforms"].items() if e.get("residuals"))]
    out += [cv_coverage_line(data), cv_last_line(data)]
    return "\n".join(out)


def run_cv(archs: list[str], write: bool) -> int:
    if write and sorted(archs) != sorted(platforms()):
        raise SystemExit("--cv --write needs every platform with points (each band's fallback pools all of them)")
    try:
        results = [cross_validate(arch, log=lambda m: print(m, file=sys.stderr, flush=True)) for arch in archs]
    except ValueError as error:
        raise ConfigError("", None, str(error)) from None
    results = [r for r in results if r.rows]
    hardware = list(archs) + sorted(p.stem for p in CONF_HARDWARE.glob("*.yaml") if p.stem not in archs)
    data = constant_set.build(results, hardware)
    print(cv_report(data))
    if write:
        print(f"wrote {constant_set.write(data)}", file=sys.stderr)
    return 0
