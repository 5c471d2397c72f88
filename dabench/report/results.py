"""The results table a sweep (multirun, study, grid) ends with: ok runs first, best throughput
first, then every other run with its status and reason, and the runs per status under it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from dabench.report.frame import client_for, load_frame, load_runs, normalize, runs_to_frame
from dabench.runtime.sinks import write_csv
from dabench.tracking.outbox import PREFIX, is_unreachable, outbox_dir, waiting_runs

#: the table's columns (normalized frame columns), in order; the CSV adds every param and metric
COLUMNS = tuple("run_name status mode throughput band step_ms li allocation diagnosis reason run_id".split())
HEADERS = {
    "run_name": "run",
    "throughput": "samples/s",
    "band": "band (80%)",
    "step_ms": "step ms",
    "li": "LI",
    "allocation": "alloc",
}
SHOWN = 20  #: rows printed in the terminal (the CSV holds all)


def results_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run: ok runs by throughput (highest first), then the others by status. Pure."""
    if frame.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    step = frame["metrics.step_time.median_s"] if "metrics.step_time.median_s" in frame.columns else float("nan")
    table = frame.assign(
        step_ms=pd.to_numeric(step, errors="coerce") * 1e3,
        band=_bands(frame),
        _ok=(frame["status"] == "ok").astype(int),
    ).sort_values(
        ["_ok", "throughput", "status", "run_name"],
        ascending=[False, False, True, True],
        na_position="last",
        kind="stable",
    )
    extra = sorted(c for c in table.columns if c.startswith(("params.", "metrics.")))
    return table[[c for c in COLUMNS if c in table.columns] + extra].reset_index(drop=True)


def _bands(table: pd.DataFrame) -> pd.Series:
    """ "lo-hi" of each run's samples/s band (docs/perfmodel.md), None where the run has none."""
    absent = pd.Series(math.nan, index=table.index)
    low, high = (
        pd.to_numeric(table.get(f"metrics.throughput.samples_per_s.{e}", absent), errors="coerce") for e in ("lo", "hi")
    )

    def short(v: float) -> str:
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"

    return pd.Series(
        [None if math.isnan(a) or math.isnan(b) else f"{short(a)}-{short(b)}" for a, b in zip(low, high, strict=False)],
        index=table.index,
        dtype=object,
    )


def status_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Runs per status: ok first, then the most frequent (ties by name)."""
    counts = {str(k): int(v) for k, v in frame["status"].value_counts().items()}
    return dict(sorted(counts.items(), key=lambda kv: (kv[0] != "ok", -kv[1], kv[0])))


def _cell(column: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if column in ("li", "allocation") and isinstance(value, float):
        return f"{value:.2f}" if column == "li" else f"{value:.1%}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    text = str(value).splitlines()[0] if str(value) else ""
    if column == "run_id":
        return text[:8]
    return text if len(text) <= 60 else text[:57] + "..."


def render_results(frame: pd.DataFrame, title: str = "results", shown: int = SHOWN) -> str:
    """The table as aligned text, the best ``shown`` rows, then the status counts. Pure."""
    table = results_table(frame)
    listed = ", ".join(f"{n} {s}" for s, n in status_counts(frame).items()) or "no runs"
    head = f"{title}: {len(frame)} runs ({listed})"
    if table.empty:
        return head
    columns = [
        c
        for c in COLUMNS
        if c in table.columns
        and (c not in ("reason",) or table[c].astype(str).str.len().any())
        and (c != "band" or table[c].notna().any())
    ]
    rows = [[HEADERS.get(c, c) for c in columns]] + [
        [_cell(c, row[c]) for c in columns] for _, row in table.head(shown).iterrows()
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns))]
    lines = [head] + ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    lines.insert(2, "  ".join("-" * w for w in widths))  # under the header row
    if len(table) > shown:
        lines.append(f"... {len(table) - shown} more runs in results.csv")
    return "\n".join(lines)


def write_results_csv(frame: pd.DataFrame, path: Path) -> Path:
    """``results.csv``: :func:`results_table` with every param and metric column."""
    return write_csv("results_csv", Path(path), results_table(frame), index=False)


def sweep_mode(frame: pd.DataFrame) -> str:
    """The parent's ``dabench.mode``: the one mode of its runs, ``mixed`` when they differ,
    ``none`` without runs (invalid configs carry mode ``none``)."""
    modes = sorted({m for m in frame["mode"] if m not in ("none", "unknown")}) if not frame.empty else []
    return modes[0] if len(modes) == 1 else ("mixed" if modes else "none")


def record_sweep_results(client, parent_run_id: str, folder: Path | None, title: str = "results") -> str:
    """The text table of ``parent_run_id``'s children (those in the outbox too), also written to
    ``folder/results.csv`` and logged on the parent, whose ``dabench.mode`` is tagged; a parent in
    the outbox (or an unreachable store) gets neither."""
    offline = parent_run_id.startswith(PREFIX)
    frame = normalize(pd.DataFrame())
    if not offline:
        try:
            frame, _ = load_frame(selection=parent_run_id, kind="run", client=client)
        except Exception as error:
            if not is_unreachable(error):
                raise
            offline = True
    frame = frame[frame["run_id"] != parent_run_id].reset_index(drop=True)  # a parent without children selects itself
    waiting = waiting_runs(parent_run_id)
    if waiting:  # the runs kept in the outbox count too, in their newer state
        newer = runs_to_frame(waiting)
        frame = pd.concat([frame[~frame["run_id"].isin(set(newer["run_id"]))], newer], ignore_index=True)
    text = render_results(frame, title)
    if waiting:
        text += f"\n{len(waiting)} of these runs wait in the outbox {outbox_dir()} (dabench sync replays them)"
    if folder is not None:
        path = write_results_csv(frame, Path(folder) / "results.csv")
        if not offline:
            client.log_artifact(parent_run_id, str(path))
        text += f"\nresults.csv: {path}" + ("" if offline else f" (also an artifact of MLflow run {parent_run_id})")
    if not offline:
        client.set_tag(parent_run_id, "dabench.mode", sweep_mode(frame))
    return text


def record_grid_results(uri: str | None, run_ids: list[str], folder: Path | None, title: str = "grid results") -> str:
    """A grid's results (``run_ids``: one or more): as :func:`record_sweep_results` under their
    parent, else the table alone."""
    client = client_for(uri)
    parent = client.get_run(run_ids[0]).data.tags.get("mlflow.parentRunId")
    if parent:
        return record_sweep_results(client, parent, folder, title)
    return render_results(load_runs(uri, run_ids), title)
