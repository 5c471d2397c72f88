"""``python -m dabench compare RUN [RUN ...] [--csv PATH]``: runs side by side.

One column per run; rows: what the run is (name, platform, mode, status, diagnosis), every
metric any of the runs has, then the params that differ between them (all params with
``--all-params``); after the table, each run's MLflow page (docs/ui.md). Read through
dabench.report.frame, the same reader as the report. Exit status 2 with one line naming the unknown
ids when a run id is not in the store.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import LIST, REQUIRED, TEXT
from dabench.report.frame import load_runs
from dabench.runtime.sinks import write_csv
from dabench.tracking.store import tracking_uri
from dabench.tracking.ui_view import run_urls

HEAD = (
    "run_name",
    "experiment",
    "platform",
    "mode",
    "status",
    "reason",
    "diagnosis",
    "tags.dabench.constants",
    "tags.dabench.band",
)  # the band's own rows: metrics <name>.lo / .hi


def comparison(frame: pd.DataFrame, all_params: bool = False) -> pd.DataFrame:
    """The side-by-side table of ``frame`` (one row per run): index = row names, one column per run
    (its id's first 8 characters). Pure."""
    metrics = sorted(c for c in frame.columns if c.startswith("metrics."))
    params = sorted(c for c in frame.columns if c.startswith("params."))
    if not all_params:
        params = [c for c in params if frame[c].astype(str).nunique(dropna=False) > 1]
    rows = [c for c in HEAD if c in frame.columns] + metrics + params
    table = frame.set_index("run_id")[rows].T
    table.columns = [str(c)[:8] for c in table.columns]
    table.index = [i.removeprefix("metrics.") for i in table.index]
    return table


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    text = str(value)
    return text if len(text) <= 48 else text[:45] + "..."


def render(table: pd.DataFrame) -> str:
    """The table as aligned text for a terminal ('-' where a run lacks the row)."""
    return table.map(_cell).to_string()


@command(
    "compare",
    __doc__.split("\n\n")[1],
    {
        "runs": arg(LIST, "MLflow run ids", REQUIRED, item=arg(TEXT, "a run id", max_len=64), min_items=1),
        "--csv": arg(TEXT, "also write the table to this CSV file"),
        "--all-params": flag("show every param, not only those that differ"),
        "--tracking-uri": arg(TEXT, "MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db)"),
    },
    writes={"exports": lambda args: args.csv is not None},
    export="--csv",
)
def main(args) -> int:
    frame = load_runs(args.tracking_uri, list(args.runs))
    table = comparison(frame, args.all_params)
    print(render(table))
    links = run_urls(tracking_uri(args.tracking_uri), zip(frame["run_id"], frame["experiment"], strict=True))
    print("MLflow pages (`dabench ui` serves a local store):")
    print("\n".join(f"  {run_id[:8]}  {url}" for run_id, url in links.items()))
    if args.csv:
        write_csv("exports", Path(args.csv), table, index_label="row")
        print(f"dabench compare: {len(table)} rows x {len(table.columns)} runs -> {args.csv}")
    return 0
