"""``python -m dabench report [SELECTION] --out DIR``: the cross-run report of a store.

SELECTION is an experiment name, a parent run id (a sweep: its child runs), a study name (the
children of its parent runs) or an MLflow filter (e.g. "params.hardware.name = 'ipu'"); none
means every run in the store. Writes DIR/report.html (self-contained), DIR/figures/*.png and
*.svg and DIR/runs.csv; with ``--log``, a sweep's report is also logged under its parent run
as report/ (the store is otherwise only read).
Exit status: 0 written, 2 a selection or store that names nothing (one line saying what exists).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dabench.cli.args import Arg, Schema, parse_or_exit
from dabench.pipeline.preflight import check_sink, format_problems

ARGS = Schema(
    "dabench report",
    __doc__.split("\n\n")[1],
    (
        Arg(
            "selection",
            "experiment name, parent run id, study name or MLflow filter (default: every run)",
            nargs="?",
        ),
        Arg("--out", "output folder", "path", default=Path("report")),
        Arg("--tracking-uri", "MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///./mlruns/mlflow.db)"),
        Arg(
            "--kind",
            "how to read SELECTION (auto: run id, experiment, study, then filter)",
            "choice",
            default="auto",
            choices=("auto", "experiment", "run", "study", "filter"),
        ),
        Arg("--log", "also log the report under the sweep's parent run as report/", "flag"),
        Arg("--no-log", "do not log the report under the sweep's parent run (the default)", "flag"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    args = parse_or_exit(ARGS, argv)
    started = time.perf_counter()
    problems = check_sink("exports", args.out / "report.html", "--out")  # before any work
    if problems:
        print(format_problems(problems), file=sys.stderr)
        return 2
    from dabench.report.advice import write_advice_pages  # the advice page of `dabench advise` runs (docs/advise.md)
    from dabench.report.frame import SelectionError, client_for, load_frame
    from dabench.report.html import write_report

    try:
        client = client_for(args.tracking_uri)
        frame, selection = load_frame(selection=args.selection, kind=args.kind, client=client)
    except SelectionError as error:
        print(f"dabench report: {error}", file=sys.stderr)
        return 2
    report = write_report(frame, args.out, selection.label, client.tracking_uri)  # OSError: cli/main.py
    print(f"dabench report: {len(frame)} runs ({selection.label}) -> {report.html}")
    print(f"  figures: {len(report.figures) // 2} in {args.out / 'figures'} (PNG and SVG); runs: {report.csv}")
    for key, note in report.notes.items():
        print(f"  {key}: {note}")
    for page in write_advice_pages(frame, args.out, client):
        print(f"  advice page (PREDICTED): {page}")
    if selection.sweep_parent and args.log and not args.no_log:
        client.log_artifacts(selection.sweep_parent, str(args.out), artifact_path="report")
        print(f"  logged under parent run {selection.sweep_parent} as report/")
    print(f"  took {time.perf_counter() - started:.1f} s")
    return 0
