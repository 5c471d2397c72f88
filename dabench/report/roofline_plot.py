"""The roofline figure of one run (SVG): the roof, one point per op class, one for the step.

Written as SVG text without matplotlib (its import would dominate a small run): :class:`LogLogChart`
is a small log-log chart with only what the roofline needs (a line, markers, decade ticks, a
reference line, a legend).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

from dabench.metrics.roofline import RooflinePoint

FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))  #: largest first
WIDTH, HEIGHT = 520, 380  #: the plot area in pixels
LEFT, TOP, RIGHT, BOTTOM = 106, 46, 330, 56  #: the margins around it (the legend sits in the right one)


def _f(value: float) -> str:
    return f"{value:.1f}"


def decade_label(value: float, unit: str = "") -> str:
    """A decade tick's text: with a ``unit``, SI-prefixed (``10 GFLOP/s``); else plain (``0.01``) or ``1e-5``."""
    exponent = round(math.log10(value))
    if unit:
        prefixes = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
        base = 3 * math.floor(exponent / 3)
        if base in prefixes:
            return f"{10 ** (exponent - base)} {prefixes[base]}{unit}"
        return f"1e{exponent} {unit}"
    if -3 <= exponent <= 4:
        return f"{value:.{max(0, -exponent)}f}"
    return f"1e{exponent}"


def marker_svg(shape: str, x: float, y: float, size: float, color: str, filled: bool, attributes: str = "") -> str:
    """One ``circle``, ``diamond``, ``star`` or ``cross`` of radius ``size`` centred at pixel (x, y)."""
    fill = color if filled else "white"
    style = f"fill='{fill}' stroke='{color}' stroke-width='1.6' {attributes}".rstrip()
    if shape == "circle":
        return f"<circle cx='{_f(x)}' cy='{_f(y)}' r='{_f(size)}' {style}/>"
    if shape == "cross":
        d = size * 0.8
        return (
            f"<path d='M{_f(x - d)},{_f(y - d)}L{_f(x + d)},{_f(y + d)}M{_f(x - d)},{_f(y + d)}"
            f"L{_f(x + d)},{_f(y - d)}' fill='none' stroke='{color}' stroke-width='2' {attributes}/>"
        )
    if shape == "diamond":
        corners = [(x, y - size * 1.2), (x + size, y), (x, y + size * 1.2), (x - size, y)]
    elif shape == "star":  # ten corners, alternately on the outer and the inner circle
        angles = [math.pi / 2 + i * math.pi / 5 for i in range(10)]
        radii = [size * (1.0 if i % 2 == 0 else 0.45) for i in range(10)]
        corners = [(x + r * math.cos(a), y - r * math.sin(a)) for r, a in zip(radii, angles, strict=True)]
    else:
        raise ValueError(f"unknown marker shape {shape!r}")
    points = " ".join(f"{_f(a)},{_f(b)}" for a, b in corners)
    return f"<polygon points='{points}' {style}/>"


@dataclass
class LogLogChart:
    """A log-log plot area of :data:`WIDTH` x :data:`HEIGHT` pixels within the margins; limits
    rounded out to decades."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    body: list[str] = field(default_factory=list)  #: SVG elements inside the axes (clipped to them)
    _legend: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.x_lo, self.x_hi = 10 ** math.floor(math.log10(self.x_lo)), 10 ** math.ceil(math.log10(self.x_hi))
        self.y_lo, self.y_hi = 10 ** math.floor(math.log10(self.y_lo)), 10 ** math.ceil(math.log10(self.y_hi))

    def px(self, x: float) -> float:
        """Pixel column of data x (log scale)."""
        span = math.log10(self.x_hi) - math.log10(self.x_lo)
        return LEFT + (math.log10(x) - math.log10(self.x_lo)) / span * WIDTH

    def py(self, y: float) -> float:
        """Pixel row of data y (log scale, upwards)."""
        span = math.log10(self.y_hi) - math.log10(self.y_lo)
        return TOP + HEIGHT - (math.log10(y) - math.log10(self.y_lo)) / span * HEIGHT

    def legend_entry(
        self, text: str, shape: str | None = None, color: str = "black", filled: bool = True, size: float = 5.0
    ) -> None:
        """A legend row beside the axes: a marker sample (or a line sample when ``shape`` is None)."""
        x = LEFT + WIDTH + 18
        y = TOP + 8 + 17 * len(self._legend)
        sample = (
            f"<line x1='{_f(x - 8)}' y1='{_f(y)}' x2='{_f(x + 8)}' y2='{_f(y)}' stroke='{color}' stroke-width='2'/>"
            if shape is None
            else marker_svg(shape, x, y, size, color, filled)
        )
        self._legend.append(
            f"{sample}<text x='{_f(x + 16)}' y='{_f(y + 4)}' font-size='11' {FONT}>{escape(text)}</text>"
        )

    def _axes(self, title: str, x_label: str, y_label: str, y_unit: str) -> list[str]:
        """The box, dotted decade grid lines, tick labels (y ticks SI-prefixed in ``y_unit``:
        ``10 GFLOP/s``), the axis labels and the title."""
        left, top, right, bottom = LEFT, TOP, LEFT + WIDTH, TOP + HEIGHT
        out = [
            f"<rect x='{_f(left)}' y='{_f(top)}' width='{_f(WIDTH)}' height='{_f(HEIGHT)}' fill='none' stroke='black'/>"
        ]
        for lo, hi, horizontal in ((self.x_lo, self.x_hi, True), (self.y_lo, self.y_hi, False)):
            decades = round(math.log10(hi / lo))
            step = max(1, math.ceil(decades / 10))
            for k in range(0, decades + 1):
                value = lo * 10**k
                if horizontal:  # a dotted grid line, and every step-th one its tick label at (x, y)
                    x1 = x2 = x = self.px(value)
                    y1, y2, y, anchor, text = top, bottom, bottom + 16, "middle", decade_label(value)
                else:
                    y1 = y2 = self.py(value)
                    x1, x2, x, y, anchor, text = left, right, left - 6, y1 + 4, "end", decade_label(value, y_unit)
                out.append(
                    f"<line x1='{_f(x1)}' y1='{_f(y1)}' x2='{_f(x2)}' y2='{_f(y2)}' "
                    "stroke='#ccc' stroke-dasharray='1,2'/>"
                )
                if k % step == 0:
                    out.append(
                        f"<text x='{_f(x)}' y='{_f(y)}' font-size='11' text-anchor='{anchor}' {FONT}>{text}</text>"
                    )
        middle = (top + bottom) / 2
        return out + [
            f"<text x='{_f((left + right) / 2)}' y='{_f(bottom + 38)}' font-size='12' "
            f"text-anchor='middle' {FONT}>{escape(x_label)}</text>",
            f"<text x='16' y='{_f(middle)}' font-size='12' text-anchor='middle' "
            f"transform='rotate(-90 16 {_f(middle)})' {FONT}>{escape(y_label)}</text>",
            f"<text x='{_f(left)}' y='26' font-size='13' font-weight='bold' {FONT}>{escape(title)}</text>",
        ]

    def svg(self, title: str, x_label: str, y_label: str, y_unit: str = "") -> str:
        """The whole document (:meth:`_axes` for the arguments); points outside the axes box are
        clipped to it."""
        total_w = LEFT + WIDTH + RIGHT
        total_h = max(TOP + HEIGHT + BOTTOM, TOP + 17 * len(self._legend) + 16)
        size = f"width='{_f(total_w)}' height='{_f(total_h)}'"
        lines = [
            f"<svg xmlns='http://www.w3.org/2000/svg' {size} viewBox='0 0 {_f(total_w)} {_f(total_h)}'>",
            f"<defs><clipPath id='axes'><rect x='{_f(LEFT)}' y='{_f(TOP)}' width='{_f(WIDTH)}' "
            f"height='{_f(HEIGHT)}'/></clipPath></defs>",
            f"<rect {size} fill='white'/>",
            *self._axes(title, x_label, y_label, y_unit),
            "<g clip-path='url(#axes)'>",
        ]
        return "\n".join([*lines, *self.body, "</g>", *self._legend, "</svg>"]) + "\n"


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
    chart = LogLogChart(lo, hi, y_lo, peak_flops * 2)
    roof = [(chart.x_lo, chart.x_lo * bandwidth), (ridge, peak_flops), (chart.x_hi, peak_flops)]
    points, column = " ".join(f"{_f(chart.px(x))},{_f(chart.py(y))}" for x, y in roof), chart.px(ridge)
    chart.body += [
        f"<polyline points='{points}' fill='none' stroke='black' stroke-width='2.0' data-roof='1'/>",
        f"<line x1='{_f(column)}' y1='{_f(TOP)}' x2='{_f(column)}' y2='{_f(TOP + HEIGHT)}' stroke='grey' "
        "stroke-dasharray='2,3'/>",  # the ridge: a dotted grey line, its intensity written along it
        f"<text x='{_f(column + 4)}' y='{_f(TOP + HEIGHT - 6)}' font-size='10' fill='grey' {FONT}>"
        f"{escape(f'ridge {ridge:.3g} FLOP/B')}</text>",
    ]
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
        chart.body.append(
            marker_svg(shape, chart.px(p.intensity), chart.py(y), size, color, kind != "predicted", attributes)
        )
        chart.legend_entry(label, shape, color, filled=kind != "predicted", size=min(size, 7.0))
    return chart.svg(
        f"{title} [{kinds}]",
        f"arithmetic intensity (FLOP/byte of {memory_level} traffic)",
        "achieved FLOP/s per chip",
        "FLOP/s",
    )
