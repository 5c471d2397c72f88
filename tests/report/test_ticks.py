"""The report's plain log tick labels (dabench/report/figures.py): readable text, no mathtext, and
labels on the same ticks as matplotlib's default log formatter."""

from __future__ import annotations

import io

import pytest
from matplotlib.figure import Figure

from dabench.report.figures import log_axis, plain_label


@pytest.mark.parametrize(
    ("value", "base", "text"),
    [
        (1, 10, "1"),
        (10, 10, "10"),
        (100, 10, "100"),
        (1000, 10, "1k"),
        (2e4, 10, "20k"),
        (999.9999999, 10, "1k"),
        (1.5e6, 10, "1.5M"),
        (1e12, 10, "1T"),
        (3e14, 10, "300T"),
        (1e15, 10, "1P"),
        (1e21, 10, "1e21"),
        (0.5, 10, "0.5"),
        (0.01, 10, "0.01"),
        (1e-4, 10, "1e-4"),
        (256, 2, "256"),
        (1024, 2, "1024"),
        (0.5, 2, "0.5"),
        (2.0**20, 2, "2^20"),
    ],
)
def test_plain_label(value, base, text):
    assert plain_label(value, base) == text


def _labels(axis) -> list[tuple[float, str]]:
    ticks = axis.get_major_ticks() + axis.get_minor_ticks()
    return sorted((t.get_loc(), t.label1.get_text()) for t in ticks if t.label1.get_visible())


@pytest.mark.parametrize(("lo", "hi", "base"), [(0.1, 1e4, 10), (1e10, 1e16, 10), (1.42e4, 1.61e4, 10), (8, 200, 2)])
def test_same_ticks_labelled_as_the_default(lo, hi, base):
    """Over wide and narrow spans: the same tick positions as the default formatter, a label
    on exactly the ticks the default labels, none of them mathtext."""
    figures = []
    for plain in (False, True):
        fig = Figure(figsize=(4, 3), layout="constrained")
        ax = fig.subplots()
        ax.plot([1, 2], [lo, hi])
        ax.set_ylim(lo, hi)
        if plain:
            log_axis(ax, "y", base)
        else:
            ax.set_yscale("log", base=base)
        fig.savefig(io.BytesIO(), format="svg")  # a draw: the ticks and their labels are set
        figures.append(_labels(ax.yaxis))
    default, plain = figures
    assert [loc for loc, _ in plain] == [loc for loc, _ in default]
    assert [bool(text) for _, text in plain] == [bool(text) for _, text in default]
    assert any(text for _, text in plain)
    assert not any("$" in text for _, text in plain)
