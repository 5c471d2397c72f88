"""``python -m dabench fit``: refit the analytical models' fitted constants to the public
calibration points and print point / predicted / published / error.

Each path has its module (published.py, cv_text.py, from_mlflow.py); --export is here. Method:
docs/perfmodel.md, "Out-of-sample error and bands"; docs/fitting.md.
"""

from __future__ import annotations

import json

from dabench.cli.fit.cv_text import run_cv
from dabench.cli.fit.published import platforms, run_published
from dabench.cli.frame import arg, command, flag
from dabench.config.fields import CHOICE, LIST, TEXT, Spec
from dabench.config.paths import require_checkout
from dabench.core.status import ConfigError
from dabench.perfmodel import constants
from dabench.tracking.naming import MAX_EXPERIMENT_CHARS


@command(
    "fit",
    __doc__.split("\n\n")[0],
    {
        "--arch": arg(
            LIST, "platforms to refit (default: all with points)", item=Spec(CHOICE, choices=tuple(platforms()))
        ),
        "--write": flag("save the refit to conf/hardware/<arch>.yaml and residuals.json"),
        "--check": flag("no refit: exit 1 if a shipped prediction is out of tolerance"),
        "--cv": flag(
            "leave-one-out refits: out-of-sample error, bands and their nested coverage (YAML unchanged); with "
            "--write, save the constant set published.json"
        ),
        "--from-mlflow": arg(
            TEXT,
            "fit from measured runs in MLflow (SELECTION as dabench report takes it: experiment, parent run, study "
            "or filter; none: every run); writes the named set --name",
            min_len=0,
        ),
        "--name": arg(TEXT, "the constant set --from-mlflow writes", "fitted"),
        "--base": arg(TEXT, "the set a fit starts from and is compared with", "published"),
        "--host": arg(TEXT, "--from-mlflow: only this machine (a dabench.host_key tag)"),
        "--tracking-uri": arg(TEXT, "--from-mlflow: the store (default: dabench's resolution)"),
        "--experiment": arg(
            TEXT, "--from-mlflow: experiment of the set's own run", "dabench-fit", max_len=MAX_EXPERIMENT_CHARS
        ),
        "--no-log": flag("--from-mlflow: do not log the set on an MLflow run"),
        "--export": arg(TEXT, "print constant set NAME (or FILE) as JSON, for another team"),
    },
    writes={
        "source_tree": lambda args: args.write or args.from_mlflow is not None,
        **{sink: (lambda args: args.from_mlflow is not None and not args.no_log) for sink in ("store", "artifacts")},
    },
)
def main(args) -> int:
    if args.export:  # for another team's hardware.constants=path/to/file (docs/fitting.md)
        try:
            data = constants.resolve(args.export)
        except (OSError, ValueError) as error:
            raise ConfigError("", None, str(error)) from None
        print(json.dumps(data, indent=1))
        return 0
    if args.from_mlflow is not None:
        from dabench.cli.fit.from_mlflow import run_from_mlflow

        return run_from_mlflow(args)
    if args.write:  # it rewrites shipped files: conf/hardware/, residuals.json, published.json
        require_checkout("fit --write")
    archs = list(args.arch or platforms())
    if args.cv:
        return run_cv(archs, args.write)
    return run_published(args, archs)
