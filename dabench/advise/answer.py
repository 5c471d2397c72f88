"""The answer of ``dabench advise``: one ranked row per platform, the terminal table and the CSV
(:mod:`dabench.advise.record` writes them with the JSON). Every number is PREDICTED by an
analytical model (and energy and cost are estimates on top of that): the table says so on each
number, the CSV in its ``label`` column.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shlex
from pathlib import Path
from typing import Any

from dabench.advise import energy as E
from dabench.advise.reach import approx_params, calibration, outside
from dabench.advise.run import Advice, PlatformOutcome
from dabench.advise.space import overrides_of
from dabench.core.platforms import preset
from dabench.runtime.sinks import cell, write_text

TIER1 = (
    "tier1.compute_efficiency",
    "tier1.allocation_ratio",
    "tier1.load_imbalance",
    "roofline.step.intensity",
    "roofline.step.roof_share",
)
CSV_COLUMNS = [
    "rank",
    "platform",
    "status",
    "label",
    "tokens_per_s",
    "tokens_per_s_lo",
    "tokens_per_s_hi",
    "samples_per_s",
    "samples_per_s_lo",
    "samples_per_s_hi",
    "band",
    "time_to_train_s",
    "time_lo_s",
    "time_hi_s",
    "chips",
    "energy_kwh",
    "energy_lo_kwh",
    "energy_hi_kwh",
    "power_source",
    "cost",
    "cost_lo",
    "cost_hi",
    "diagnosis",
    "diagnosis_reason",
    *TIER1,
    "bandwidth_efficiency",
    "constants",
    "model_version",
    "error_band",
    "out_of_sample_error",
    "excluded_points",
    "reach",
    "command",
    "measure_command",
    "evaluations",
    "trials",
    "infeasible",
    "space_size",
    "reason",
]

#: the band columns of each ranking objective
_BANDS = {
    "time": ("time_lo_s", "time_hi_s"),
    "energy": ("energy_lo_kwh", "energy_hi_kwh"),
    "cost": ("cost_lo", "cost_hi"),
}


def _command(advice: Advice, outcome: PlatformOutcome, mode: str) -> str:
    """The ``python -m dabench`` command line of the platform's best deployment in ``mode``."""
    overrides = overrides_of(
        outcome.space, advice.request.model_args(), outcome.best.precision, outcome.best.values, mode
    )
    return " ".join(["python -m dabench", *(shlex.quote(o) for o in overrides)])


def platform_row(advice: Advice, outcome: PlatformOutcome) -> dict[str, Any]:
    req = advice.request
    figure = preset(outcome.platform).power
    cal = calibration(outcome.platform)
    row: dict[str, Any] = {
        **dict.fromkeys(CSV_COLUMNS),
        "platform": outcome.platform,
        "label": "PREDICTED",
        "evaluations": len(outcome.evaluations),
        "trials": outcome.trials,
        "infeasible": sum(n for s, n in outcome.statuses.items() if s != "ok"),
        "space_size": outcome.space.size(),
        "power_source": figure.label(),
        "out_of_sample_error": cal.oos_text(),
        "excluded_points": cal.excluded_text(),
        "constants": cal.constants,
        "model_version": cal.model_version,
    }
    result = outcome.result
    if outcome.best is None or result is None or getattr(result.status, "value", result.status) != "ok":
        row.update(status="none_fits", reason=outcome.none_reason or (result.reason if result is not None else ""))
        return row
    m = result.metrics
    notes = result.notes or {}
    sps, tps = m["throughput.samples_per_s"], m["throughput.tokens_per_s"]
    lo, hi = m.get("throughput.samples_per_s.lo"), m.get("throughput.samples_per_s.hi")
    ratios = E.band_ratios(sps, (lo, hi) if lo is not None and hi is not None else None)
    chips = outcome.best.chips
    t = E.time_to_train_s(req.tokens, tps)
    tb = E.time_band(req.tokens, tps, ratios)
    tb_ratio = None if tb is None else (tb[0] / t, tb[1] / t)
    joules = E.energy_j(figure.watts_per_chip, chips, t)
    money = E.cost(
        t,
        chips,
        per_chip_hour=req.price_per_chip_hour,
        per_system_hour=req.price_per_system_hour,
        chips_per_system=int(((outcome.config or {}).get("hardware") or {}).get("chips_per_node") or 1),
    )
    bands = {"time": tb, "energy": E.scale_band(E.kwh(joules), tb_ratio), "cost": E.scale_band(money, tb_ratio)}
    why = outside(cal, approx_params(outcome.config["model"]), chips, outcome.best.precision)
    row.update(
        status="ok",
        tokens_per_s=tps,
        samples_per_s=sps,
        samples_per_s_lo=lo if ratios else None,
        samples_per_s_hi=hi if ratios else None,
        tokens_per_s_lo=tps * ratios[0] if ratios else None,
        tokens_per_s_hi=tps * ratios[1] if ratios else None,
        band=(f"{notes.get('dabench.constants', cal.constants)}" if ratios else "no band"),
        time_to_train_s=t,
        chips=chips,
        energy_kwh=E.kwh(joules),
        cost=money,
        diagnosis=result.diagnosis[0] if result.diagnosis else "",
        diagnosis_reason=result.diagnosis[1] if result.diagnosis else "",
        bandwidth_efficiency=next((v for k, v in m.items() if k.startswith("tier1.bandwidth_efficiency.")), None),
        constants=notes.get("dabench.constants", cal.constants),
        error_band=notes.get("dabench.error_band", ""),
        model_version=notes.get("dabench.model_version", cal.model_version),
        reach="inside calibration" if not why else "OUTSIDE calibration: " + "; ".join(why),
        command=_command(advice, outcome, "predict"),
        measure_command=_command(advice, outcome, "measure"),
        **{k: m.get(k) for k in TIER1},
    )
    for objective, band in bands.items():
        row.update(zip(_BANDS[objective], band or (None, None), strict=True))
    return row


def rows(advice: Advice) -> list[dict[str, Any]]:
    """One row per platform, ranked by the first objective (platforms where none fits last)."""
    out = [platform_row(advice, o) for o in advice.outcomes]
    key = {"time": "time_to_train_s", "energy": "energy_kwh", "cost": "cost"}[advice.request.objectives[0]]

    def order(r):
        v = r.get(key)
        if r["status"] != "ok":
            return (2, math.inf)
        return (0, v) if v is not None else (1, r["time_to_train_s"])

    out.sort(key=order)
    for i, r in enumerate(out, 1):
        r["rank"] = i
    return out


def search_rows(advice: Advice) -> list[dict[str, Any]]:
    """Every evaluated deployment of every platform (the search artifact): its status and
    reason, or its PREDICTED throughput, time and estimated energy; ``pareto`` marks the time
    vs energy Pareto set over all platforms with a sourced power figure."""
    out = []
    for o in advice.outcomes:
        figure = preset(o.platform).power
        for e in o.evaluations:
            t = E.time_to_train_s(advice.request.tokens, e.tokens_per_s) if e.ok else None
            joules = E.energy_j(figure.watts_per_chip, e.chips, t) if t is not None else None
            out.append(
                {
                    "platform": o.platform,
                    "label": "PREDICTED",
                    "status": e.status,
                    "reason": e.reason,
                    "precision": e.precision,
                    "deployment": json.dumps(e.values, sort_keys=True),
                    "chips": None if math.isnan(e.chips) else e.chips,
                    "tokens_per_s": e.tokens_per_s if e.ok else None,
                    "time_to_train_s": t,
                    "energy_kwh": E.kwh(joules),
                    "best": e is o.best,
                    "pareto": False,
                }
            )
    points = [
        (r["time_to_train_s"], r["energy_kwh"])
        if r["time_to_train_s"] is not None and r["energy_kwh"] is not None
        else (math.inf, math.inf)
        for r in out
    ]
    for i in E.pareto_front(points):
        out[i]["pareto"] = True
    return out


def _num(v, fmt="{:,.3g}") -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def _band(lo, hi, fmt) -> str:
    return "no band" if lo is None or hi is None else f"{fmt(lo)}..{fmt(hi)}"


def overlaps(ranked: list[dict[str, Any]], objective: str) -> list[str]:
    """One line per pair of ranked platforms whose bands on the ranking objective overlap: the
    model cannot tell which of the two is better."""
    lo, hi = _BANDS[objective]
    ok = [r for r in ranked if r["status"] == "ok" and r.get(lo) is not None and r.get(hi) is not None]
    return [
        f"bands overlap: #{a['rank']} {a['platform']} and #{b['rank']} {b['platform']} on {objective} "
        f"(PREDICTED bands intersect): the ranking between them is not settled"
        for i, a in enumerate(ok)
        for b in ok[i + 1 :]
        if a[lo] <= b[hi] and b[lo] <= a[hi]
    ]


def table(advice: Advice, ranked: list[dict[str, Any]]) -> str:
    """The terminal answer of ``advice`` with its :func:`rows`."""
    req = advice.request
    head = [
        "#",
        "platform",
        "tokens/s PREDICTED [band]",
        f"time to train {req.tokens:.3g} tok PREDICTED [band]",
        "chips",
        "energy kWh ESTIMATE",
        "cost",
        "diagnosis",
        "CE",
        "alloc",
        "LI",
        "calibration",
        "reach",
    ]
    lines = []
    for r in ranked:
        if r["status"] != "ok":
            lines.append([str(r["rank"]), r["platform"], "none fits", *["-"] * 8, r["out_of_sample_error"], "-"])
            continue
        lines.append(
            [
                str(r["rank"]),
                r["platform"],
                f"{_num(r['tokens_per_s'])} [{_band(r['tokens_per_s_lo'], r['tokens_per_s_hi'], _num)}]",
                f"{E.human_time(r['time_to_train_s'])} [{_band(r['time_lo_s'], r['time_hi_s'], E.human_time)}]",
                _num(r["chips"], "{:g}"),
                "unsourced" if r["energy_kwh"] is None else _num(r["energy_kwh"]),
                "-" if r["cost"] is None else _num(r["cost"]),
                r["diagnosis"],
                _num(r["tier1.compute_efficiency"], "{:.1%}"),
                _num(r["tier1.allocation_ratio"], "{:.0%}"),
                _num(r["tier1.load_imbalance"], "{:.2f}"),
                r["out_of_sample_error"],
                "inside" if r["reach"] == "inside calibration" else r["reach"],
            ]
        )
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(head)]
    widths[-1] = len(head[-1])  # the reach column is free text: not padded
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()
    out = [
        f"dabench advise: {req.model}{' ' + ' '.join(req.model_overrides) if req.model_overrides else ''}, "
        f"{req.tokens:.4g} tokens, objective {','.join(req.objectives)}, max_chips={req.max_chips}: "
        "every number is PREDICTED by dabench's analytical models (energy and cost: ESTIMATES on top), never measured",
        fmt(head),
        fmt(["-" * w for w in widths]),
        *(fmt(l) for l in lines),
        *overlaps(ranked, req.objectives[0]),
        "",
    ]
    for r in ranked:
        out.append(
            f"{r['rank']}. {r['platform']}: {r['evaluations']} of {r['space_size']} deployments evaluated "
            f"({r['infeasible']} infeasible); constants {r['constants']}, model {r['model_version']}"
        )
        if r["status"] != "ok":
            out.append(f"   none fits: {r['reason']}")
            continue
        out += [
            f"   predict: {r['command']}",
            f"   measure: {r['measure_command']}",
            f"   why: {r['diagnosis']}: {r['diagnosis_reason']}",
            f"   power: {r['power_source']}",
        ]
        if r["excluded_points"]:
            out.append(f"   calibration points the model does not cover: {r['excluded_points']}")
    if len(set(advice.request.objectives) & {"time", "energy"}) == 2:
        front = [p for p in search_rows(advice) if p["pareto"]]
        out += [
            "",
            f"time vs energy Pareto set (PREDICTED time, ESTIMATED energy; platforms with a sourced power figure): "
            f"{len(front)} deployments",
        ]
        out += [
            f"   {p['platform']:<5} {E.human_time(p['time_to_train_s']):>9}  {_num(p['energy_kwh'])} kWh  "
            f"{p['chips']:g} chips  {p['precision']} {p['deployment']}"
            for p in sorted(front, key=lambda p: p["time_to_train_s"])
        ]
    return "\n".join(out)


def write_csv(ranked: list[dict[str, Any]], path: Path | io.TextIOBase, columns: list[str] = CSV_COLUMNS) -> None:
    """Rows as CSV (``columns``, None as empty) into ``path`` (an export, written whole) or an open stream."""
    handle = io.StringIO(newline="") if isinstance(path, (str, Path)) else path
    writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows({k: ("" if r.get(k) is None else cell(r.get(k))) for k in columns} for r in ranked)
    if isinstance(path, (str, Path)):
        write_text("exports", path, handle.getvalue())
