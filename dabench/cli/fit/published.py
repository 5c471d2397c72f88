"""``dabench fit`` on the public points: refit each platform's fitted constants to points.csv and
print point / predicted / published / error; ``--write`` saves them (conf/hardware/<arch>.yaml,
residuals.json), ``--check`` only checks the shipped ones. :func:`run_published` returns the exit
status (1 only with ``--check`` and a point out of tolerance). Method: docs/perfmodel.md, "Calibration".
"""

from __future__ import annotations

import argparse
import json
import math

from dabench.config.files import with_values
from dabench.fit.evaluate import predict_point
from dabench.fit.points import Point, load_points
from dabench.fit.refit import refit
from dabench.fit.sources import CONF_HARDWARE, fitted
from dabench.perfmodel.constants import RESIDUALS_JSON, model_version, residuals
from dabench.runtime.sinks import write_json, write_text


def platforms() -> list[str]:
    return list(dict.fromkeys(p.platform for p in load_points()))


def evaluate(arch: str, options: dict | None = None) -> list[tuple[Point, float]]:
    """(point, predicted) for each point of ``arch`` (NaN: refused)."""
    return [(p, predict_point(p, options)) for p in load_points() if p.platform == arch]


def fmt(value: float) -> str:
    if math.isnan(value):
        return "refused"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def err(point: Point, value: float) -> str:
    if math.isnan(value):
        return "-"
    e = point.error(value)
    return f"{e:+.1f} pt" if point.tolerance_unit == "points" else f"{100 * e:+.1f}%"


def tol(point: Point) -> str:
    return f"{point.tolerance:g} pt" if point.tolerance_unit == "points" else f"{100 * point.tolerance:g}%"


def status(point: Point, value: float) -> str:
    if point.use == "excluded":
        return "excluded"
    return "ok" if not math.isnan(value) and abs(point.error(value)) <= point.tolerance else "OUT"


def table(rows: list[tuple[Point, float]]) -> str:
    lines = [
        f"{'point':<13} {'metric':<15} {'predicted':>10} {'published':>10} {'error':>9} {'tol':>6}  use      status",
        "-" * 84,
    ]
    lines += [
        f"{point.id:<13} {point.metric:<15} {fmt(value):>10} {fmt(point.published):>10} "
        f"{err(point, value):>9} {tol(point):>6}  {point.use:<8} {status(point, value)}"
        for point, value in rows
    ]
    return "\n".join(lines)


def write_residuals(results: dict[str, list[tuple[Point, float]]]) -> None:
    data = json.loads(RESIDUALS_JSON.read_text()) if RESIDUALS_JSON.exists() else {}
    data |= {
        arch: {
            p.id: {
                "metric": p.metric,
                "use": p.use,
                "published": p.published,
                "predicted": None if math.isnan(v) else round(v, 6),
                "error": None if math.isnan(v) else round(p.error(v), 6),
            }
            for p, v in rows
        }
        for arch, rows in results.items()
    }
    write_json("source_tree", RESIDUALS_JSON, data, indent=1, sort_keys=True)


def run_published(args: argparse.Namespace, archs: list[str]) -> int:
    """The command's default path for ``archs`` (see the module docstring)."""
    results: dict[str, list[tuple[Point, float]]] = {}
    for arch in archs:
        if not args.check and fitted(arch):
            fit = refit(arch)
            print(f"== {arch}: refit (sum of squared error/tolerance {fit.cost:.3f})")
            for name, value in fit.values.items():
                print(f"  {name}: {fit.before[name]:.6g} -> {value:.6g}")
            if args.write:  # the values' text replaced where YAML has them, comments kept
                path = CONF_HARDWARE / f"{arch}.yaml"
                write_text(
                    "source_tree", path, with_values(path, {f"options.{k}": f"{v:.6g}" for k, v in fit.values.items()})
                )
            options = fit.values  # what --write stores (at the YAML's rounding)
        else:
            options = None
        results[arch] = evaluate(arch, options)
    if args.write:
        write_residuals(results)
        residuals.cache_clear()
        model_version.cache_clear()
    failures = 0
    for arch, rows in results.items():
        print(f"\n== {arch} (model version {model_version(arch)})")
        print(table(rows))
        failures += sum(status(p, v) == "OUT" for p, v in rows)
    print(f"\n{failures} point(s) out of tolerance")
    return 1 if (args.check and failures) else 0
