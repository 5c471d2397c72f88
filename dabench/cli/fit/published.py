"""``dabench fit`` on the public points (no --cv, --from-mlflow or --export): refit each platform's
fitted constants to points.csv and print point / predicted / published / error; ``--write``
saves them (conf/hardware/<arch>.yaml, residuals.json), ``--check`` only checks the shipped ones,
``--markdown`` / ``--update-doc`` render docs/perfmodel.md's blocks.

Contract: :func:`run_published` returns the exit status (1 only with ``--check`` and a point out
of tolerance). Method: dabench/perfmodel/fit/refit.py (docs/perfmodel.md, "Calibration").
"""

from __future__ import annotations

import argparse

from dabench.cli.fit.doc_blocks import blocks, update_doc
from dabench.cli.fit.tables import evaluate, status, table, write_residuals
from dabench.perfmodel.fit import model_version, residuals
from dabench.perfmodel.fit.evaluate import _load
from dabench.perfmodel.fit.points import Point
from dabench.perfmodel.fit.refit import refit, write_values
from dabench.perfmodel.fit.sources import fitted
from dabench.perfmodel.knobs import _CACHE


def run_published(args: argparse.Namespace, archs: list[str]) -> int:
    """The command's default path for ``archs`` (see the module docstring)."""
    refit_now = not (args.check or args.markdown or args.update_doc)
    results: dict[str, list[tuple[Point, float]]] = {}
    for arch in archs:
        if refit_now and fitted(arch):
            fit = refit(arch)
            print(f"== {arch}: refit (sum of squared error/tolerance {fit.cost:.3f})")
            for name, value in fit.values.items():
                print(f"  {name}: {fit.before[name]:.6g} -> {value:.6g}")
            if args.write:
                write_values(arch, fit.values)

                _CACHE.clear()
                _load.cache_clear()
            options = None if args.write else fit.values
        else:
            options = None
        results[arch] = evaluate(arch, options)
    if args.write:
        write_residuals(results)
        residuals.cache_clear()
        model_version.cache_clear()
    if args.markdown or args.update_doc:
        generated = blocks(results)
        if args.update_doc:
            print("docs/perfmodel.md " + ("updated" if update_doc(generated) else "already current"))
        else:
            print("\n\n".join(generated.values()))
        return 0
    failures = 0
    for arch, rows in results.items():
        print(f"\n== {arch} (model version {model_version(arch)})")
        print(table(arch, rows))
        failures += sum(status(p, v) == "OUT" for p, v in rows)
    print(f"\n{failures} point(s) out of tolerance")
    return 1 if (args.check and failures) else 0
