"""A measured ceiling as a band, so that a noisy machine widens its numbers instead of losing them:
the roof R is the fastest repeat, the band's width w = R / median - 1, an efficiency e carries
[e / (1 + w), e (1 + w)]. Pure functions; docs/metrics.md, "Noisy machines"."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable, Mapping

NOISY_SPREAD = 0.10  #: (max - min) / median of a ceiling's repeats above which the machine is noisy


@dataclass(frozen=True)
class CeilingBand:
    """One ceiling's repeats, summarised: ``roof`` (the fastest), ``median`` and ``spread``."""

    roof: float
    median: float
    spread: float  #: (max - min) / median of the repeats

    @property
    def width(self) -> float:
        return self.roof / self.median - 1.0

    @property
    def lo(self) -> float:
        return self.roof / (1.0 + self.width)

    @property
    def hi(self) -> float:
        return self.roof * (1.0 + self.width)

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD


def ceiling_band(samples: Iterable[float]) -> CeilingBand:
    """The band of one ceiling from its timed repeats (rates, at least one, all positive)."""
    values = [float(x) for x in samples]
    if not values or min(values) <= 0:
        raise ValueError(f"a ceiling band needs positive repeats, got {values}")
    median = statistics.median(values)
    return CeilingBand(max(values), median, (max(values) - min(values)) / median)


def band_metrics(
    metrics: Mapping[str, float], peak: CeilingBand | None, bandwidth: CeilingBand | None, memory_level: str
) -> dict[str, float]:
    """The ``ceilings.*`` band metrics of a measured run and the ``.lo``/``.hi`` of its efficiencies,
    e / (1 + w) and e (1 + w) for the width w of their ceiling's band, the top stopping at 1 (no
    roof is below the rate it bounds) unless e is above it (docs/metrics.md); a ceiling set in the
    spec (None) contributes nothing."""
    bands = {"peak_flops": peak, "bandwidth_Bps": bandwidth}
    out = {
        f"ceilings.{name}{suffix}": value
        for name, band in bands.items()
        if band is not None
        for suffix, value in (("", band.roof), (".lo", band.lo), (".hi", band.hi))
    }
    present = [b for b in bands.values() if b is not None]
    if not present:
        return out
    out |= {
        "ceilings.spread": max(b.spread for b in present),
        "ceilings.band_width": max(b.width for b in present),
        "ceilings.noisy": float(any(b.noisy for b in present)),
    }
    for name, band in (
        ("tier1.compute_efficiency", peak),
        (f"tier1.bandwidth_efficiency.{memory_level}", bandwidth),
    ):
        if band is not None and name in metrics:
            out[f"{name}.lo"], out[f"{name}.hi"] = (
                metrics[name] / (1.0 + band.width),
                min(metrics[name] * (1.0 + band.width), max(metrics[name], 1.0)),
            )
    return out


def noise_note(peak: CeilingBand | None, bandwidth: CeilingBand | None, load_per_core: float | None) -> str:
    """The ``dabench.ceilings_noise`` tag: steady or noisy, by how much, and the band."""
    present = [b for b in (peak, bandwidth) if b is not None]
    if not present:
        return ""
    spread = max(b.spread for b in present)
    width = max(b.width for b in present)
    load = "" if load_per_core is None else f", load {load_per_core:.2f}/core"
    state = (
        f"noisy: repeats spread {spread:.0%} (> {NOISY_SPREAD:.0%})"
        if spread > NOISY_SPREAD
        else f"steady: repeats spread {spread:.1%}"
    )
    return (
        f"{state}{load}; roof = the fastest rate shown, ceilings and efficiencies carry a band of "
        f"x or / {1 + width:.3f} (+-{width:.1%})"
    )


def held_to_band_top(
    metrics: Mapping[str, float], peak: CeilingBand | None, bandwidth: CeilingBand | None, memory_level: str
) -> dict[str, float]:
    """A copy of ``metrics`` with the measured efficiencies divided by 1 + w of their ceiling's band
    (the roof share by the wider), as the result check judges a measurement."""
    widths = {
        "tier1.compute_efficiency": peak.width if peak else 0.0,
        f"tier1.bandwidth_efficiency.{memory_level}": bandwidth.width if bandwidth else 0.0,
        "roofline.step.roof_share": max((b.width for b in (peak, bandwidth) if b is not None), default=0.0),
    }
    return {**metrics, **{name: metrics[name] / (1.0 + w) for name, w in widths.items() if name in metrics and w > 0}}
