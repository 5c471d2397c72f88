"""The roofline figure of one run (SVG): the roof, one point per op class, one for the step.

Written by :mod:`dabench.report.svg_plot`, without matplotlib (its import would dominate a small run).
"""

from __future__ import annotations

from html import escape

from dabench.metrics.roofline import RooflinePoint
from dabench.report.svg_plot import SI_PREFIXES, LogLogChart

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")
STEP_COLOR = "#d62728"


def _si(value: float, unit: str) -> str:
    """``1.23e12, 'FLOP/s'`` -> ``1.23 TFLOP/s``."""
    scale, prefix = next(((s, p) for s, p in SI_PREFIXES if abs(value) >= s), (1, ""))
    return f"{value / scale:.3g} {prefix}{unit}"


def roofline_svg(
    points: list[RooflinePoint],
    peak_flops: float,
    bandwidth: float,
    title: str,
    predicted: bool,
    memory_level: str = "main memory",
    predicted_points: list[RooflinePoint] | None = None,
) -> str:
    """The SVG text of a log-log roofline, min(peak, I * bandwidth), with the run's own ceilings.

    ``points`` are measured (filled) unless ``predicted`` (hollow); ``predicted_points`` (validate)
    adds the prediction beside them; a class without its own time is an 'x' on the roof. Each
    marker carries ``data-point``, ``data-kind``, ``data-intensity`` and ``data-flops``."""
    groups = [(points, predicted)] + ([(predicted_points, True)] if predicted_points else [])
    drawn = [(p, is_predicted) for group, is_predicted in groups for p in group if p.intensity > 0]
    ridge = peak_flops / bandwidth
    intensities = [p.intensity for p, _ in drawn] + [ridge]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    values = [p.achieved if p.achieved else p.attainable for p, _ in drawn]
    y_lo = min([v for v in values if v > 0] + [min(peak_flops, lo * bandwidth)]) / 3
    kinds = "measured and PREDICTED" if predicted_points else ("PREDICTED" if predicted else "measured")
    chart = LogLogChart(
        lo,
        hi,
        y_lo,
        peak_flops * 2,
        title=f"{title} [{kinds}]",
        x_label=f"arithmetic intensity (FLOP/byte of {memory_level} traffic)",
        y_label="achieved FLOP/s per chip",
        y_unit="FLOP/s",
    )
    chart.polyline(
        [chart.x_lo, ridge, chart.x_hi], [chart.x_lo * bandwidth, peak_flops, peak_flops], attributes="data-roof='1'"
    )
    chart.vline(ridge, f"ridge {ridge:.3g} FLOP/B")
    chart.legend_entry(f"compute roof: {_si(peak_flops, 'FLOP/s')} peak")
    chart.legend_entry(f"memory roof: I x {_si(bandwidth, 'B/s')} ({memory_level})")
    class_color: dict[str, str] = {}
    for p, is_predicted in drawn:
        step = p.name == "step"
        color = STEP_COLOR if step else class_color.setdefault(p.name, COLORS[len(class_color) % len(COLORS)])
        size = 9.0 if step else 5.0
        if p.achieved:
            kind = "predicted" if is_predicted else "measured"
            shape = "star" if step else ("diamond" if is_predicted else "circle")
            y, label = p.achieved, f"{p.name} ({'PREDICTED' if is_predicted else 'measured'})"
        elif not is_predicted or not predicted_points:
            kind, shape, y, label = "on-roof", "cross", p.attainable, f"{p.name} (no own time: on the roof)"
        else:
            continue
        attributes = (
            f"data-point='{escape(p.name)}' data-kind='{kind}' data-intensity='{p.intensity!r}' data-flops='{y!r}'"
        )
        chart.marker(shape, p.intensity, y, size, color, filled=kind != "predicted", attributes=attributes)
        chart.legend_entry(label, shape, color, filled=kind != "predicted", size=min(size, 7.0))
    return chart.svg()
