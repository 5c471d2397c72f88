"""Plain-text tick labels for the log axes of the report's figures (docs/report.md, "Figures").

:func:`log_axis` sets an axis to log scale with :class:`PlainLogFormatter` for its major and minor
ticks: the same ticks and the same choice of which ticks get a label as matplotlib's default, but
written as plain text (``1``, ``10``, ``100``, ``1k``, ``20k``, ``1T``, ``0.01``, ``1e-4``; base 2:
``256``, ``512``, ``1024``) instead of mathtext (``10^3``), whose parsing dominated a report's time.
"""

from __future__ import annotations

import math

from matplotlib.ticker import LogFormatter

_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def plain_label(value: float, base: float = 10) -> str:
    """The text of a log tick at ``value`` > 0: base 10 with an SI prefix from 1000 up (``20k``,
    ``1.5M``), plain from 0.001 to 1000, else ``1e-4``; base 2: whole numbers below 100000
    (``1024``), plain fractions down to 0.001, else ``2^20``."""
    value = float(f"{value:.6g}")  # 999.9999999 (a float power) is the tick at 1000
    if base == 2:
        exponent = round(math.log2(value))
        if 1e-3 <= value < 1e5:
            return f"{value:.0f}" if value >= 1 else f"{value:g}"
        return f"2^{exponent}"
    for scale, prefix in _PREFIXES:
        if scale <= value < scale * 1000:
            return f"{value / scale:.3g}{prefix}"
    if 1e-3 <= value < 1e3:
        return f"{value:.3g}"
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


class PlainLogFormatter(LogFormatter):
    """matplotlib's LogFormatter (which ticks are labelled: decades, and minor ticks on an axis
    spanning about a decade or less) with :func:`plain_label` text."""

    def _num_to_string(self, x, vmin, vmax):
        return plain_label(x, self._base)


def log_axis(ax, which: str = "y", base: int = 10) -> None:
    """Set ``ax``'s ``which`` axis ("x" or "y") to log scale (``base``) with plain tick labels."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
    axis.set_major_formatter(PlainLogFormatter(base=base))
    axis.set_minor_formatter(PlainLogFormatter(base=base))
