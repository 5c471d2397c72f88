"""The "advice" page of ``dabench report``: for every ``dabench advise`` parent among the selected
runs, ``advice.html`` (``advice-<id>.html`` when there are several) from its ``advice/advice.json``
artifact: the ranked table (PREDICTED; energy and cost ESTIMATES), time to train per platform with
its band, the time vs energy Pareto plot and each winner's diagnosis (docs/report.md).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from dabench.report.figures import log_axis, new_figure
from dabench.runtime.sinks import write_text

PREDICTED = "PREDICTED"
NO_DATA = "<p>no data (no feasible deployment with a sourced power figure)</p>"
HEAD = (
    "#|platform|tokens/s|tokens/s band|time to train (h)|time band (h)|chips|energy kWh (ESTIMATE)|cost (ESTIMATE)|"
    "diagnosis|compute eff.|allocation|LI|calibration|reach|command"
).split("|")


def _hours(s: float | None) -> float | None:
    return None if s is None or not math.isfinite(s) else s / 3600.0


def _given(value: Any) -> bool:
    return value not in (None, "")


def bar_figure(rows: list[dict]):
    ok = [r for r in rows if r.get("status") == "ok" and r.get("time_to_train_s")]
    if not ok:
        return None
    fig, ax = new_figure(6.4, 3.2)
    hours = [_hours(r["time_to_train_s"]) for r in ok]
    bars = ax.bar([r["platform"] for r in ok], hours, color="#4c72b0")
    for i, r in enumerate(ok):
        lo, hi = _hours(r.get("time_lo_s")), _hours(r.get("time_hi_s"))
        if lo is not None and hi is not None:
            ax.errorbar([i], [hours[i]], yerr=[[hours[i] - lo], [hi - hours[i]]], color="black", capsize=4)
        else:
            ax.annotate(
                "no band", (bars[i].get_x() + bars[i].get_width() / 2, hours[i]), ha="center", va="bottom", fontsize=8
            )
    log_axis(ax, "y")
    ax.set_ylabel("time to train, hours (PREDICTED)")
    ax.set_title("Time to train per platform, best deployment (PREDICTED)", fontsize=10)
    return fig


def pareto_figure(search: list[dict]):
    points = [
        s
        for s in search
        if s.get("status") == "ok" and _given(s.get("energy_kwh")) and _given(s.get("time_to_train_s"))
    ]
    if not points:
        return None
    fig, ax = new_figure(6.4, 3.6)
    for platform in sorted({p["platform"] for p in points}):
        mine = [p for p in points if p["platform"] == platform]
        ax.scatter(
            [_hours(p["time_to_train_s"]) for p in mine],
            [p["energy_kwh"] for p in mine],
            s=10,
            alpha=0.5,
            label=platform,
        )
    front = sorted((p for p in points if p.get("pareto")), key=lambda p: p["time_to_train_s"])
    if front:
        ax.plot(
            [_hours(p["time_to_train_s"]) for p in front],
            [p["energy_kwh"] for p in front],
            "k-o",
            ms=4,
            label="Pareto set",
        )
    log_axis(ax, "x")
    log_axis(ax, "y")
    ax.set(xlabel="time to train, hours (PREDICTED)", ylabel="energy, kWh (ESTIMATE)")
    ax.set_title("Every evaluated deployment: time vs energy", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def _fmt(v: Any, fmt: str = "{:,.3g}") -> str:
    if v is None or v == "" or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return fmt.format(v) if isinstance(v, (int, float)) else str(v)


def _cell(v: Any, fmt: str = "{:,.3g}") -> str:
    text = _fmt(v, fmt)
    return html.escape(text if text == "-" else f"{text} {PREDICTED}")


def render(advice: dict, parent_id: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    rows, search = advice.get("rows") or [], advice.get("search") or []
    figs = ""
    for name, fig in (("Time to train, with bands", bar_figure(rows)), ("Time vs energy", pareto_figure(search))):
        image = NO_DATA
        if fig is not None:
            svg = io.BytesIO()
            fig.savefig(svg, format="svg")
            data = base64.b64encode(svg.getvalue()).decode("ascii")
            image = f"<img alt='{html.escape(name)}' src='data:image/svg+xml;base64,{data}'>"
        figs += f"<h2>{html.escape(name)}</h2>{image}"
    body = []
    for r in rows:
        if r.get("status") != "ok":
            body.append(
                f"<tr><td>{r.get('rank')}</td><td>{html.escape(str(r.get('platform')))}</td>"
                f"<td colspan='{len(HEAD) - 2}'>none fits: {html.escape(str(r.get('reason') or ''))}</td></tr>"
            )
            continue
        band = lambda lo, hi, scale=1.0: (
            f"{lo * scale:,.3g}..{hi * scale:,.3g} {PREDICTED}" if _given(lo) and _given(hi) else "no band"
        )
        cells = [
            str(r.get("rank")),
            str(r.get("platform")),
            _cell(r.get("tokens_per_s")),
            html.escape(band(r.get("tokens_per_s_lo"), r.get("tokens_per_s_hi"))),
            _cell(_hours(r.get("time_to_train_s"))),
            html.escape(band(r.get("time_lo_s"), r.get("time_hi_s"), 1 / 3600)),
            html.escape(_fmt(r.get("chips"), "{:g}")),
            _cell(r.get("energy_kwh")) if _given(r.get("energy_kwh")) else "unsourced",
            _cell(r.get("cost")),
            html.escape(str(r.get("diagnosis") or "")),
            _cell(r.get("tier1.compute_efficiency"), "{:.1%}"),
            _cell(r.get("tier1.allocation_ratio"), "{:.0%}"),
            _cell(r.get("tier1.load_imbalance"), "{:.2f}"),
            html.escape(str(r.get("out_of_sample_error") or "")),
            html.escape(str(r.get("reach") or "")),
            f"<code>{html.escape(str(r.get('command') or ''))}</code>",
        ]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    diagnoses = "".join(
        f"<li><b>{html.escape(str(r['platform']))}</b>: {html.escape(str(r.get('diagnosis') or ''))}: "
        f"{html.escape(str(r.get('diagnosis_reason') or ''))}"
        f"<br>power: {html.escape(str(r.get('power_source') or ''))}</li>"
        for r in rows
        if r.get("status") == "ok"
    )
    overrides = " ".join(advice.get("model_overrides") or [])
    title = f"Advice: {advice.get('model')} {overrides}, {advice.get('tokens'):.4g} tokens"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:3px 6px;vertical-align:top}}
.banner{{background:#fff3cd;border:1px solid #e0c060;padding:.6em}}code{{font-size:11px}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="banner"><b>PREDICTED</b>: every number on this page comes from dabench's analytical models, none was measured;
energy (chip power x chips x predicted time) and cost are ESTIMATES on top. A band is the constant set's
throughput band where the run carries one; "no band" where it does not.
Objective: {html.escape(",".join(advice.get("objectives") or []))}; max_chips={advice.get("max_chips")};
{advice.get("evaluations")} deployments evaluated; parent run {html.escape(parent_id)}.</p>
<table><tr>{"".join(f"<th>{html.escape(h)}</th>" for h in HEAD)}</tr>{"".join(body)}</table>
<h2>Why each winner is bound where it is</h2><ul>{diagnoses}</ul>
{figs}
</body></html>"""


def write_advice_pages(frame: pd.DataFrame, out: Path, client) -> list[Path]:
    """Write one advice page per advise parent among ``frame``'s runs (the parents of its
    ``dabench.advise=best`` children, in order of first appearance); returns the pages."""
    if frame.empty or "tags.dabench.advise" not in frame.columns:
        return []
    rows = frame[frame["tags.dabench.advise"].astype(str) == "best"]
    column = "tags.dabench.advise_parent" if "tags.dabench.advise_parent" in rows.columns else "parent_run_id"
    parents = list(dict.fromkeys(str(p) for p in rows[column].dropna()))
    pages = []
    for parent in parents:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                path = client.download_artifacts(parent, "advice/advice.json", tmp)
            except Exception:  # a parent without its advice.json gets no page
                continue
            advice = json.loads(Path(path).read_text())
        page = out / ("advice.html" if len(parents) == 1 else f"advice-{parent[:8]}.html")
        write_text("exports", page, render(advice, parent))
        pages.append(page)
    return pages
