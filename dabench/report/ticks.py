"""Plain-text tick labels (``1k``, ``0.01``, ``1024``) for the log axes of the report's figures,
instead of mathtext, whose parsing dominated a report's time (docs/report.md, "Figures").
"""

from __future__ import annotations

import math

from matplotlib.ticker import LogFormatter

from dabench.report.roofline_plot import SI_PREFIXES


def plain_label(value: float, base: float = 10) -> str:
    """The text of a log tick at ``value`` > 0: base 10 SI-prefixed from 1000 (``20k``), plain from
    0.001, else ``1e-4``; base 2 whole numbers below 100000, plain fractions, else ``2^20``."""
    value = float(f"{value:.6g}")  # 999.9999999 (a float power) is the tick at 1000
    if base == 2:
        exponent = round(math.log2(value))
        if 1e-3 <= value < 1e5:
            return f"{value:.0f}" if value >= 1 else f"{value:g}"
        return f"2^{exponent}"
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
