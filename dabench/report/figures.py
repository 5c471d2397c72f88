"""The report's figures: pure functions from the runs frame (dabench.report.frame) to a matplotlib
Figure. A function whose data is absent raises :class:`NoData` with the note the report shows.

Conventions: one colour per platform in every figure; predicted runs are drawn with hollow
markers and dashed lines, measured runs with filled markers and solid lines. Where several runs
share a point (same platform, x and series), the one with the highest throughput is drawn (the
best configuration found); its label says so. Log axes carry plain-text tick labels
(:func:`log_axis`: ``1k``, ``0.01``, ``1024``) instead of mathtext, whose parsing dominated a
report's time (docs/report.md, "Figures").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from dabench.report.roofline_plot import SI_PREFIXES

STRATEGIES = ("dp", "tp", "pp")
_PALETTE = "#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #7f7f7f #bcbd22".split()
BAND = ("metrics.throughput.samples_per_s.lo", "metrics.throughput.samples_per_s.hi")  #: the throughput band


def plain_label(value: float, base: float = 10) -> str:
    """The text of a log tick at ``value`` > 0: base 10 SI-prefixed from 1000 (``20k``), plain from
    0.001, else ``1e-4``; base 2 whole numbers below 100000, plain fractions, else ``2^20``."""
    value = float(f"{value:.6g}")  # 999.9999999 (a float power) is the tick at 1000
    if base == 2:
        if 1e-3 <= value < 1e5:
            return f"{value:.0f}" if value >= 1 else f"{value:g}"
        return f"2^{round(math.log2(value))}"
    for scale, prefix in SI_PREFIXES:
        if scale <= value < scale * 1000:
            return f"{value / scale:.3g}{prefix}"
    if 1e-3 <= value < 1e3:
        return f"{value:.3g}"
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


class PlainLogFormatter(LogFormatter):
    """matplotlib's LogFormatter (the same ticks labelled) with :func:`plain_label` text."""

    def _num_to_string(self, x, vmin, vmax):
        return plain_label(x, self._base)


def log_axis(ax, which: str = "y", base: int = 10) -> None:
    """Set ``ax``'s ``which`` axis ("x" or "y") to log scale (``base``) with plain tick labels."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
    axis.set_major_formatter(PlainLogFormatter(base=base))
    axis.set_minor_formatter(PlainLogFormatter(base=base))


class NoData(Exception):
    """The selection holds no runs this figure can draw; the message says which runs are missing."""


@dataclass(frozen=True)
class FigureSpec:
    key: str  #: file stem and HTML anchor
    title: str
    caption: str
    draw: Callable[[pd.DataFrame], Figure]


def platform_colors(frame: pd.DataFrame) -> dict[str, str]:
    """A fixed colour per platform name (sorted), the same in every figure."""
    names = sorted(set(frame["platform"])) if "platform" in frame else []
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(names)}


def figure_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with only the columns the figures read: the normalized ones and :data:`BAND`."""
    keep = [c for c in frame.columns if not c.startswith(("metrics.", "params.", "tags.")) or c in BAND]
    return frame[keep]


def _ok(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """ok runs with a finite value in every one of ``columns``."""
    if frame.empty:
        return frame
    rows = frame[frame["status"] == "ok"]
    return rows[rows[list(columns)].apply(pd.to_numeric, errors="coerce").notna().all(axis=1)]


def _drawable(rows: pd.DataFrame, missing: str) -> pd.DataFrame:
    """``rows``, or :class:`NoData` saying ``missing`` when there are none."""
    if rows.empty:
        raise NoData(missing)
    return rows


def _best(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``, the run with the highest throughput (or the first when none has one)."""
    ordered = rows.assign(_t=rows["throughput"].fillna(-math.inf)).sort_values("_t", ascending=False)
    return ordered.drop_duplicates(keys).drop(columns="_t").sort_values(keys)


def _style(mode: str) -> dict:
    return {"ls": "--", "mfc": "white"} if mode == "predict" else {"ls": "-"}


def _label(mode: str) -> str:
    return "PREDICTED" if mode == "predict" else mode


def _line(ax, x, y, color: str, mode: str, label: str, **extra) -> None:
    """A line with round markers, dashed and hollow for predicted runs."""
    ax.plot(x, y, marker="o", color=color, label=label, **_style(mode), **extra)


def _note(ax, text: str) -> None:
    """``text`` in the middle of an empty axes."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=8)


def new_figure(width: float, height: float, columns: int = 0) -> tuple[Figure, Any]:
    """A figure and its axes: one, or with ``columns`` a 2 x columns grid sharing x per column."""
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig, fig.subplots(2, columns, squeeze=False, sharex="col") if columns else fig.subplots()


def _finish_axes(
    ax, x_label: str, y_label: str, *, x_base: int = 10, y_log: bool = True, legend_loc: str = "best"
) -> None:
    """Log x (and y unless ``y_log`` is False), axis labels, a dotted grid and a small legend."""
    log_axis(ax, "x", x_base)
    if y_log:
        log_axis(ax, "y")
    ax.set(xlabel=x_label, ylabel=y_label)
    ax.grid(True, which="both", ls=":", lw=0.5)
    ax.legend(fontsize=7, loc=legend_loc)


def _platforms_with_several(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """``rows`` of the platforms with two or more distinct values of ``column``."""
    if rows.empty:
        return rows
    counts = rows.groupby("platform")[column].nunique()
    return rows[rows["platform"].isin(counts[counts >= 2].index)]


def _band(ax, best: pd.DataFrame, x: str, color: str, alpha: float = 1.0) -> None:
    """Error bars of the throughput band (docs/perfmodel.md) where the runs have one."""
    if not set(BAND) <= set(best.columns):
        return
    banded = _ok(best, *BAND)
    if banded.empty:
        return
    y = banded["throughput"].astype(float)
    low, high = (pd.to_numeric(banded[column]).astype(float) for column in BAND)
    ax.errorbar(
        banded[x],
        y,
        yerr=[(y - low).clip(lower=0), (high - y).clip(lower=0)],
        fmt="none",
        ecolor=color,
        alpha=0.5 * alpha,
        capsize=2,
        lw=0.8,
    )


def throughput_li_vs_layers(frame: pd.DataFrame) -> Figure:
    """Per platform (columns): throughput (samples/s, log) and LI = mean/max subtask time against
    the number of decoder layers, one line per hidden size."""
    rows = _drawable(
        _ok(frame, "layers", "throughput"),
        "no ok runs with a layer count (model.n_layers) and a throughput in this selection",
    )
    platforms = sorted(set(rows["platform"]))
    fig, axes = new_figure(3.2 * len(platforms) + 0.8, 5.2, columns=len(platforms))
    colors = platform_colors(frame)
    for j, name in enumerate(platforms):
        mine = rows[rows["platform"] == name]
        top, bottom = axes[0][j], axes[1][j]
        hiddens = sorted(set(mine["hidden"].dropna())) or [float("nan")]
        for k, hidden in enumerate(hiddens):
            series = mine if math.isnan(hidden) else mine[mine["hidden"] == hidden]
            for mode, part in series.groupby("mode"):
                best = _best(part, ["layers"])
                label = f"H{int(hidden)}" if not math.isnan(hidden) else "H ?"
                alpha = 1.0 - 0.6 * k / max(len(hiddens), 1)
                _line(
                    top, best["layers"], best["throughput"], colors[name], mode, f"{label} {_label(mode)}", alpha=alpha
                )
                _band(top, best, "layers", colors[name], alpha)
                with_li = best[best["li"].notna()]
                if not with_li.empty:
                    bottom.plot(
                        with_li["layers"], with_li["li"], marker="s", color=colors[name], alpha=alpha, **_style(mode)
                    )
        log_axis(top, "y")
        top.set_title(name, fontsize=10)
        top.grid(True, which="both", ls=":", lw=0.5)
        bottom.grid(True, ls=":", lw=0.5)
        bottom.set(ylim=(0, 1.05), xlabel="decoder layers")
        top.legend(fontsize=6, loc="best")
        if mine["li"].isna().all():
            _note(bottom, f"no runs with LI on {name}")
    axes[0][0].set_ylabel("throughput (samples/s)")
    axes[1][0].set_ylabel("load imbalance LI\n(mean/max subtask time)")
    return fig


def allocation_vs_hidden(frame: pd.DataFrame) -> Figure:
    """Resource allocation ratio (units allocated / available, first unit kind) against hidden size:
    every run as a dot, the median per hidden size as a line, per platform."""
    rows = _drawable(
        _ok(frame, "hidden", "allocation"),
        "no ok runs with a hidden size and an allocation ratio (tier1.allocation_ratio) in this selection",
    )
    fig, ax = new_figure(6.5, 4.2)
    colors = platform_colors(frame)
    for (name, mode), part in rows.groupby(["platform", "mode"]):
        ax.scatter(
            part["hidden"],
            part["allocation"],
            color=colors[name],
            alpha=0.35,
            s=14,
            facecolors="none" if mode == "predict" else colors[name],
        )
        median = part.groupby("hidden")["allocation"].median()
        _line(ax, median.index, median.values, colors[name], mode, f"{name} ({_label(mode)}), median")
    _finish_axes(ax, "hidden size", "allocation ratio (units allocated / available)", x_base=2, y_log=False)
    ax.set_ylim(0, 1.05)
    return fig


def roofline(frame: pd.DataFrame) -> Figure:
    """Every run's whole-step point: arithmetic intensity (FLOP/byte) against achieved FLOP/s per
    chip, under its platform's roof min(peak FLOP/s at the run's precision, I * bandwidth). Filled
    dots: measured; hollow diamonds: predicted."""
    rows = _ok(frame, "intensity", "achieved_flops", "peak_flops", "bandwidth")
    rows = _drawable(
        rows[(rows["intensity"] > 0) & (rows["achieved_flops"] > 0)] if not rows.empty else rows,
        "no ok runs with roofline metrics (roofline.step.intensity, perf.achieved_tflops, "
        "perf.peak_tflops, roofline.ridge_intensity) in this selection",
    )
    fig, ax = new_figure(7.5, 5.0)
    colors = platform_colors(frame)
    ridges = rows["peak_flops"] / rows["bandwidth"]
    lo = min(rows["intensity"].min(), ridges.min()) / 4
    hi = max(rows["intensity"].max(), ridges.max()) * 4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    roofs = rows.drop_duplicates(["platform", "peak_flops", "bandwidth"])
    for _, roof in roofs.iterrows():
        color, peak = colors[roof["platform"]], roof["peak_flops"]
        ax.plot(xs, [min(peak, x * roof["bandwidth"]) for x in xs], color=color, lw=1.2, alpha=0.8)
        ax.annotate(
            f"{roof['platform']} {roof['precision']} roof",
            (hi / 1.1, peak),
            fontsize=6,
            ha="right",
            va="bottom",
            color=color,
        )
    for (name, mode), part in rows.groupby(["platform", "mode"]):
        predicted, label = mode == "predict", f"{name} {_label(mode)} ({len(part)})"
        marker, face = ("D", "none") if predicted else ("o", colors[name])
        ax.scatter(
            part["intensity"],
            part["achieved_flops"],
            s=28,
            marker=marker,
            facecolors=face,
            edgecolors=colors[name],
            zorder=3,
            label=label,
        )
    _finish_axes(
        ax,
        "arithmetic intensity, whole step (FLOP/byte at the main memory level)",
        "achieved FLOP/s per chip",
        legend_loc="lower right",
    )
    return fig


def scaling(frame: pd.DataFrame) -> Figure:
    """Scaling efficiency = throughput(n) / (n * throughput(1)) and communication share of the step
    against chips, one column per strategy (DP, TP, PP), one line per platform."""
    rows = _ok(frame, "chips")
    rows = _drawable(
        rows[rows["strategy"].isin(STRATEGIES)] if not rows.empty else rows,
        "no ok runs with a parallel strategy (parallel.strategy = dp, tp or pp) in this selection",
    )
    fig, axes = new_figure(10.5, 5.2, columns=3)
    colors = platform_colors(frame)
    for j, strategy in enumerate(STRATEGIES):
        mine = rows[rows["strategy"] == strategy]
        top, bottom = axes[0][j], axes[1][j]
        top.set_title(strategy.upper(), fontsize=10)
        for ax, column, what in (
            (top, "scaling_efficiency", "scaling efficiency"),
            (bottom, "comm_share", "comm share"),
        ):
            part = mine[mine[column].notna()]
            for (name, mode), series in part.groupby(["platform", "mode"]):
                best = _best(series, ["chips"])
                _line(ax, best["chips"], best[column], colors[name], mode, f"{name} {_label(mode)}")
            if part.empty:
                _note(ax, f"no {strategy.upper()} runs\nwith {what}")
            else:
                ax.legend(fontsize=6, loc="best")
            ax.set_ylim(0, 1.05)
            ax.grid(True, ls=":", lw=0.5)
        bottom.set_xlabel("chips")
    axes[0][0].set_ylabel("scaling efficiency\nT(n) / (n T(1))")
    axes[1][0].set_ylabel("communication share\nof step time")
    return fig


def batch_study(frame: pd.DataFrame) -> Figure:
    """Throughput (samples/s) against micro-batch size, one line per platform and precision (the
    best run per batch size)."""
    rows = _drawable(
        _platforms_with_several(_ok(frame, "batch", "throughput"), "batch"),
        "no platform with ok runs at two or more batch sizes (run.batch_size) in this selection",
    )
    fig, ax = new_figure(6.5, 4.2)
    colors = platform_colors(frame)
    for (name, precision, mode), part in rows.groupby(["platform", "precision", "mode"]):
        best = _best(part, ["batch"])
        _line(ax, best["batch"], best["throughput"], colors[name], mode, f"{name} {precision} {_label(mode)}")
        _band(ax, best, "batch", colors[name])
    _finish_axes(ax, "batch size (samples per chip per micro-batch)", "throughput (samples/s)", x_base=2)
    return fig


def precision_study(frame: pd.DataFrame) -> Figure:
    """Best throughput per precision on each platform, relative to that platform's slowest precision
    (bars; the label gives samples/s)."""
    rows = _drawable(
        _platforms_with_several(_ok(frame, "throughput"), "precision"),
        "no platform with ok runs at two or more precisions (precision.name) in this selection",
    )
    best = rows.groupby(["platform", "precision"])["throughput"].max().reset_index()
    colors = platform_colors(frame)
    platforms = sorted(set(best["platform"]))
    precisions = sorted(set(best["precision"]))
    fig, ax = new_figure(max(5.5, 1.6 * len(platforms) * len(precisions) ** 0.5 + 2), 4.2)
    width = 0.8 / len(precisions)
    hatches = ("", "//", "..", "xx", "\\\\", "oo")
    for k, precision in enumerate(precisions):
        for i, name in enumerate(platforms):
            mine = best[best["platform"] == name]
            value = mine[mine["precision"] == precision]["throughput"]
            if value.empty:
                continue
            relative = float(value.iloc[0]) / float(mine["throughput"].min())
            x, hatch = i + (k - (len(precisions) - 1) / 2) * width, hatches[k % len(hatches)]
            label = precision if i == 0 or precision not in ax.get_legend_handles_labels()[1] else None
            ax.bar_label(
                ax.bar(x, relative, width, color=colors[name], hatch=hatch, edgecolor="black", label=label),
                [f"{float(value.iloc[0]):.3g}"],
                fontsize=6,
            )
    ax.set_xticks(range(len(platforms)), platforms)
    ax.set_ylabel("throughput relative to the platform's slowest precision\n(label: samples/s)")
    ax.grid(True, axis="y", ls=":", lw=0.5)
    ax.legend(fontsize=7, title="precision", title_fontsize=7, loc="best")
    return fig


def diagnosis_counts(frame: pd.DataFrame) -> Figure:
    """How many runs of each platform got each bottleneck label (dabench.diagnosis)."""
    rows = _drawable(
        frame[(frame["status"] == "ok") & (frame["diagnosis"] != "")] if not frame.empty else frame,
        "no ok runs with a bottleneck diagnosis (tag dabench.diagnosis) in this selection",
    )
    table = rows.groupby(["platform", "diagnosis"]).size().unstack(fill_value=0)
    fig, ax = new_figure(6.5, 0.5 * len(table) + 2.2)
    left = table.cumsum(axis=1) - table  # each label's bar starts where the ones before it end
    for k, label in enumerate(table.columns):
        ax.barh(
            list(table.index),
            table[label].tolist(),
            left=left[label].tolist(),
            color=_PALETTE[k % len(_PALETTE)],
            label=label,
        )
    ax.set_xlabel("runs")
    ax.legend(fontsize=7, loc="best")
    ax.grid(True, axis="x", ls=":", lw=0.5)
    return fig


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "layers",
        "Throughput and load imbalance against depth",
        "Per platform: throughput (log) and LI = mean/max subtask time against decoder layers, one line per "
        "hidden size (best run per point). Solid/filled: measured; dashed/hollow: PREDICTED.",
        throughput_li_vs_layers,
    ),
    FigureSpec(
        "allocation",
        "Resource allocation against width",
        "Units allocated / units available (first unit kind of the platform: PEs, PCUs, tiles, cores) against "
        "hidden size; dots are runs, lines the median per hidden size.",
        allocation_vs_hidden,
    ),
    FigureSpec(
        "roofline",
        "Roofline: every platform",
        "Whole-step points of every run under its platform's roof at the run's precision, "
        "min(peak FLOP/s, intensity x bandwidth). Filled dots: measured; hollow diamonds: PREDICTED.",
        roofline,
    ),
    FigureSpec(
        "scaling",
        "Scaling with chips (DP, TP, PP)",
        "Scaling efficiency T(n)/(n T(1)) and communication share of the step time against chips, per strategy.",
        scaling,
    ),
    FigureSpec(
        "batch", "Batch-size study", "Throughput against micro-batch size (best run per batch size).", batch_study
    ),
    FigureSpec(
        "precision",
        "Precision study",
        "Best throughput per precision, relative to each platform's slowest precision.",
        precision_study,
    ),
    FigureSpec(
        "diagnosis",
        "Bottleneck diagnosis",
        "Runs per bottleneck label and platform (the table below lists each run's label and the numbers behind it).",
        diagnosis_counts,
    ),
)
