"""``python -m dabench fit``: refit the analytical models' fitted constants to the public
calibration points and print point / predicted / published / error.

Each path has its module (published.py, cv_text.py, from_mlflow.py); --export is here. Method:
docs/perfmodel.md, "Out-of-sample error and bands"; docs/fitting.md.
"""

from __future__ import annotations

import json
import sys

from dabench.cli.args import Arg, Schema, parse_or_exit
from dabench.cli.fit.cv_text import run_cv
from dabench.cli.fit.published import platforms, run_published
from dabench.config.paths import require_checkout
from dabench.perfmodel import constants

ARGS = Schema(
    "dabench fit",
    __doc__.split("\n\n")[0],
    (
        Arg("--arch", "a platform to refit (default: all with points)", "choice", choices=platforms, repeats=True),
        Arg("--write", "save the refit to conf/hardware/<arch>.yaml and residuals.json", "flag"),
        Arg("--check", "no refit: exit 1 if a shipped prediction is out of tolerance", "flag"),
        Arg(
            "--cv",
            "leave-one-out refits: out-of-sample error, bands and their nested coverage (YAML unchanged); with "
            "--write, save the constant set published.json",
            "flag",
        ),
        Arg(
            "--from-mlflow",
            "fit from measured runs in MLflow (SELECTION as dabench report takes it: experiment, parent run, study "
            "or filter; none: every run); writes the named set --name",
            nargs="?",
            const="",
            empty_ok=True,
            metavar="SELECTION",
        ),
        Arg("--name", "the constant set --from-mlflow writes", default="fitted"),
        Arg("--base", "the set a fit starts from and is compared with", default="published"),
        Arg("--host", "--from-mlflow: only this machine (a dabench.host_key tag)"),
        Arg("--tracking-uri", "--from-mlflow: the store (default: dabench's resolution)"),
        Arg("--experiment", "--from-mlflow: experiment of the set's own run", default="dabench-fit"),
        Arg("--no-log", "--from-mlflow: do not log the set on an MLflow run", "flag"),
        Arg("--export", "print constant set NAME (or FILE) as JSON, for another team", metavar="NAME"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    args = parse_or_exit(ARGS, argv)
    if args.export:  # for another team's hardware.constants=path/to/file (docs/fitting.md)
        try:
            data = constants.resolve(args.export)
        except (OSError, ValueError) as error:
            print(f"dabench fit: {error}", file=sys.stderr)
            return 2
        print(json.dumps(data, indent=1))
        return 0
    if args.from_mlflow is not None:
        from dabench.cli.fit.from_mlflow import run_from_mlflow

        return run_from_mlflow(args)
    if args.write:  # it rewrites shipped files: conf/hardware/, residuals.json, published.json
        require_checkout("fit --write")
    archs = args.arch or platforms()
    if args.cv:
        return run_cv(archs, args.write)
    return run_published(args, archs)
