"""Frame -> report folder: report.html (self-contained: every figure embedded as a base64 SVG
data URI, no scripts, no external files; run names link to their MLflow pages, docs/ui.md),
figures/<key>.png and .svg, and runs.csv."""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from dabench import __version__
from dabench.report.figures import FIGURES, NoData, figure_columns
from dabench.runtime.sinks import make_dir, write_bytes, write_csv, write_text
from dabench.tracking.redact import redact_uri
from dabench.tracking.ui_view import run_urls, ui_base_url

MAX_TABLE_ROWS = 500  #: rows of the per-run tables in the HTML (all runs are in runs.csv)


@dataclass
class Report:
    """What :func:`write_report` wrote: the HTML, the figure files and the notes of figures without data."""

    html: Path
    csv: Path
    figures: list[Path] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)


def _number(value) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def _rows(frame: pd.DataFrame, columns: list[str], links: dict[str, str] | None = None) -> list[dict]:
    return [
        {
            **{c: _number(r.get(c, "")) if c == "throughput" else r.get(c, "") for c in columns},
            "url": (links or {}).get(str(r.get("run_id", "")), ""),  # the run's MLflow page
        }
        for _, r in frame.head(MAX_TABLE_ROWS).iterrows()
    ]


def render(fig) -> tuple[io.BytesIO, io.BytesIO]:
    """(SVG, PNG at 110 dpi) of ``fig``; the PNG reuses the SVG's layout (its engine removed)."""
    import matplotlib

    svg, png = io.BytesIO(), io.BytesIO()
    fig.savefig(svg, format="svg")
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)  # with these two off: no engine at all
    fig.savefig(png, format="png", dpi=110)
    return svg, png


def write_report(frame: pd.DataFrame, out: Path, selection: str, uri: str) -> Report:
    """Write the report of ``frame`` (see module docstring) into ``out``; figures without data
    become notes in the HTML."""
    import jinja2
    import matplotlib

    matplotlib.use("Agg")
    make_dir("exports", out)
    figures_dir = make_dir("exports", out / "figures")
    csv_path = write_csv("exports", out / "runs.csv", frame, index=False)
    report = Report(out / "report.html", csv_path)
    shown = []
    drawn = figure_columns(frame)
    for spec in FIGURES:
        image = note = None
        try:
            fig = spec.draw(drawn)
        except NoData as missing:
            note = report.notes[spec.key] = str(missing)
        else:
            svg, png = render(fig)
            write_bytes("exports", figures_dir / f"{spec.key}.svg", svg.getvalue())
            write_bytes("exports", figures_dir / f"{spec.key}.png", png.getvalue())
            report.figures += [figures_dir / f"{spec.key}.svg", figures_dir / f"{spec.key}.png"]
            image = base64.b64encode(svg.getvalue()).decode("ascii")
        shown.append({"key": spec.key, "title": spec.title, "caption": spec.caption, "image": image, "note": note})
    ok = frame[frame["status"] == "ok"]
    diagnosed = ok[ok["diagnosis"] != ""].sort_values(["platform", "run_name"])
    failed = frame[frame["status"] != "ok"].sort_values(["platform", "run_name"])
    modes = frame["mode"].value_counts()
    links = (
        run_urls(uri, zip(frame["run_id"], frame.get("experiment", frame["run_id"]), strict=True))
        if not frame.empty
        else {}
    )
    html = (
        jinja2.Environment(
            loader=jinja2.PackageLoader("dabench.report", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        .get_template("report.html.j2")
        .render(
            selection=selection,
            uri=redact_uri(uri),
            version=__version__,
            ui_base=ui_base_url(uri),
            generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            platforms=sorted(set(frame["platform"])),
            counts={
                "total": len(frame),
                "ok": len(ok),
                "failed": len(failed),
                "measure": int(modes.get("measure", 0)),
                "predict": int(modes.get("predict", 0)),
                "unknown_mode": int(len(frame) - modes.get("measure", 0) - modes.get("predict", 0)),
            },
            figures=shown,
            diagnosis_rows=_rows(
                diagnosed, ["run_name", "platform", "mode", "throughput", "diagnosis", "diagnosis_reason"], links
            ),
            diagnosis_more=max(0, len(diagnosed) - MAX_TABLE_ROWS),
            failure_rows=_rows(failed, ["run_name", "platform", "mode", "status", "reason"], links),
            failure_more=max(0, len(failed) - MAX_TABLE_ROWS),
        )
    )
    write_text("exports", report.html, html)
    return report
