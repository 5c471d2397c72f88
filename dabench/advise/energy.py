"""Pure functions of ``dabench advise``: time, energy and cost to train N tokens, their bands
(a samples/s band's ratios apply to tokens/s; a higher throughput is a shorter time) and the
Pareto set. Every input is a PREDICTED throughput; every output is an estimate.
"""

from __future__ import annotations

import math
from typing import Sequence

Band = tuple[float, float]


def time_to_train_s(tokens: float, tokens_per_s: float) -> float:
    """Seconds to train ``tokens`` at ``tokens_per_s`` (inf when the rate is not positive)."""
    if tokens_per_s is None or not tokens_per_s > 0 or not math.isfinite(tokens_per_s):
        return math.inf
    return float(tokens) / tokens_per_s


def band_ratios(samples_per_s: float, band: Band | None) -> Band | None:
    """(lo / mid, hi / mid) of a samples/s band, or None without one (or a degenerate one)."""
    if band is None or not samples_per_s or samples_per_s <= 0:
        return None
    lo, hi = band
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi < lo:
        return None
    return (lo / samples_per_s, hi / samples_per_s)


def time_band(tokens: float, tokens_per_s: float, ratios: Band | None) -> Band | None:
    """(shortest, longest) time to train under the throughput band ``ratios``."""
    if ratios is None:
        return None
    return (time_to_train_s(tokens, tokens_per_s * ratios[1]), time_to_train_s(tokens, tokens_per_s * ratios[0]))


def energy_j(watts_per_chip: float | None, chips: float, seconds: float) -> float | None:
    """Joules: chip power x chips x time (None without a power figure)."""
    if watts_per_chip is None or not math.isfinite(seconds):
        return None
    return watts_per_chip * chips * seconds


def kwh(joules: float | None) -> float | None:
    return None if joules is None else joules / 3.6e6


def cost(
    seconds: float,
    chips: float,
    *,
    per_chip_hour: float | None = None,
    per_system_hour: float | None = None,
    chips_per_system: int = 1,
) -> float | None:
    """Price of the chips (or of the whole systems they occupy, rounded up) for ``seconds``."""
    if not math.isfinite(seconds):
        return None
    hours = seconds / 3600.0
    if per_chip_hour is not None:
        return per_chip_hour * chips * hours
    if per_system_hour is not None:
        return per_system_hour * math.ceil(chips / max(1, chips_per_system)) * hours
    return None


def scale_band(value: float | None, band: Band | None) -> Band | None:
    """A quantity proportional to time (energy, cost) under a time band, given its value at the
    time's middle and the time band as ratios to that time."""
    if value is None or band is None:
        return None
    return (value * band[0], value * band[1])


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates, both coordinates minimised (ties kept
    once: the first of equal points). Points with a non-finite coordinate are left out."""
    order = sorted(
        (i for i, p in enumerate(points) if all(math.isfinite(v) for v in p)),
        key=lambda i: (points[i][0], points[i][1]),
    )
    front, best_second = [], math.inf
    for i in order:
        if points[i][1] < best_second:
            front.append(i)
            best_second = points[i][1]
    return front


def human_time(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    for unit, size in (("y", 365.25 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"
