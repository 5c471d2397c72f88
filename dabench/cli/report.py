"""``python -m dabench report [SELECTION] --out DIR``: the cross-run report of a store.

SELECTION is an experiment name, a parent run id (a sweep: its child runs), a study name (the
children of its parent runs) or an MLflow filter (e.g. "params.hardware.name = 'ipu'"); none
means every run in the store. Writes DIR/report.html (self-contained), DIR/figures/*.png and
*.svg and DIR/runs.csv; with ``--log``, a sweep's report is also logged under its parent run
as report/ (the store is otherwise only read).
Exit status: 0 written, 2 a selection or store that names nothing (one line saying what exists).
"""

from __future__ import annotations

import time
from pathlib import Path

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import CHOICE, TEXT


@command(
    "report",
    __doc__.split("\n\n")[1],
    {
        "selection": arg(TEXT, "experiment name, parent run id, study name or MLflow filter (default: every run)"),
        "--out": arg(TEXT, "output folder", "report"),
        "--tracking-uri": arg(TEXT, "MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db)"),
        "--kind": arg(
            CHOICE,
            "how to read SELECTION (auto: run id, experiment, study, then filter)",
            "auto",
            choices=("auto", "experiment", "run", "study", "filter"),
        ),
        "--log": flag("also log the report under the sweep's parent run as report/"),
        "--no-log": flag("do not log the report under the sweep's parent run (the default)"),
    },
    writes={"exports": True, "artifacts": lambda args: args.log, "store": lambda args: args.log},
    exclusive=("--log", "--no-log"),
    export="--out/report.html",
)
def main(args) -> int:
    started, out = time.perf_counter(), Path(args.out)
    from dabench.report.advice import write_advice_pages  # the advice page of `dabench advise` runs (docs/advise.md)
    from dabench.report.frame import client_for, load_frame
    from dabench.report.html import write_report

    client = client_for(args.tracking_uri)
    frame, selection = load_frame(selection=args.selection, kind=args.kind, client=client)
    report = write_report(frame, out, selection.label, client.tracking_uri)
    print(f"dabench report: {len(frame)} runs ({selection.label}) -> {report.html}")
    print(f"  figures: {len(report.figures) // 2} in {out / 'figures'} (PNG and SVG); runs: {report.csv}")
    for key, note in report.notes.items():
        print(f"  {key}: {note}")
    for page in write_advice_pages(frame, out, client):
        print(f"  advice page (PREDICTED): {page}")
    if selection.sweep_parent and args.log:
        client.log_artifacts(selection.sweep_parent, str(out), artifact_path="report")
        print(f"  logged under parent run {selection.sweep_parent} as report/")
    print(f"  took {time.perf_counter() - started:.1f} s")
    return 0
