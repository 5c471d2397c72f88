"""``dabench fit`` on the public points (no --cv, --from-mlflow or --export): refit each platform's
fitted constants to points.csv and print point / predicted / published / error; ``--write``
saves them (conf/hardware/<arch>.yaml, residuals.json), ``--check`` only checks the shipped ones.

Contract: :func:`run_published` returns the exit status (1 only with ``--check`` and a point out
of tolerance). Method: dabench/fit/refit.py (docs/perfmodel.md, "Calibration").
"""

from __future__ import annotations

import argparse

from dabench.cli.fit.tables import evaluate, status, table, write_residuals
from dabench.fit.points import Point
from dabench.fit.refit import refit, write_values
from dabench.fit.sources import fitted
from dabench.perfmodel.constants import model_version, residuals


def run_published(args: argparse.Namespace, archs: list[str]) -> int:
    """The command's default path for ``archs`` (see the module docstring)."""
    refit_now = not args.check
    results: dict[str, list[tuple[Point, float]]] = {}
    for arch in archs:
        if refit_now and fitted(arch):
            fit = refit(arch)
            print(f"== {arch}: refit (sum of squared error/tolerance {fit.cost:.3f})")
            for name, value in fit.values.items():
                print(f"  {name}: {fit.before[name]:.6g} -> {value:.6g}")
            if args.write:
                write_values(arch, fit.values)
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
        print(table(arch, rows))
        failures += sum(status(p, v) == "OUT" for p, v in rows)
    print(f"\n{failures} point(s) out of tolerance")
    return 1 if (args.check and failures) else 0
