"""A measured ceiling as a band, so that a noisy machine widens its numbers instead of losing them.

From the timed repeats of one ceiling (a calibration's, and in validate mode also the in-situ
probes'), all pure functions:

- the roof R = the fastest repeat, the fastest rate this machine has shown: efficiencies and
  roofline points are taken against it;
- the band's width w = R / median(repeats) - 1 (about 0 on a steady machine), and the band
  [R / (1 + w), R * (1 + w)] = [median, R^2 / median] on the ceiling;
- an efficiency e = achieved / R carries [e / (1 + w), e * (1 + w)];
- a measured roofline point, or a measured efficiency, is a physics violation only above the
  band's top R * (1 + w) (:func:`held_to_band_top`).

The machine is called *noisy* when a ceiling's repeats spread ((max - min) / median) more than
:data:`dabench.host.calibrate.NOISY_SPREAD`. Details: docs/metrics.md, "Noisy machines".
"""

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
        """Relative half-width of the band, R / median - 1."""
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


def efficiency_band(efficiency: float, width: float) -> tuple[float, float]:
    """(lo, hi) of an efficiency taken against a roof whose band has relative half-width ``width``."""
    return efficiency / (1.0 + width), efficiency * (1.0 + width)


def band_metrics(
    metrics: Mapping[str, float], peak: CeilingBand | None, bandwidth: CeilingBand | None, memory_level: str
) -> dict[str, float]:
    """The band metrics of a measured run: ``ceilings.peak_flops`` / ``ceilings.bandwidth_Bps``
    with ``.lo``/``.hi``, ``ceilings.spread`` and ``ceilings.band_width`` (the larger of the two),
    ``ceilings.noisy`` (0/1), and ``.lo``/``.hi`` of ``tier1.compute_efficiency`` and
    ``tier1.bandwidth_efficiency.<memory_level>`` where ``metrics`` has them. A ceiling that was
    not measured here (set in the spec) is None and contributes nothing."""
    out: dict[str, float] = {}
    bands = {"peak_flops": peak, "bandwidth_Bps": bandwidth}
    for name, band in bands.items():
        if band is not None:
            out[f"ceilings.{name}"], out[f"ceilings.{name}.lo"], out[f"ceilings.{name}.hi"] = (
                band.roof,
                band.lo,
                band.hi,
            )
    present = [b for b in bands.values() if b is not None]
    if not present:
        return out
    out["ceilings.spread"] = max(b.spread for b in present)
    out["ceilings.band_width"] = max(b.width for b in present)
    out["ceilings.noisy"] = float(any(b.noisy for b in present))
    for name, band in (
        ("tier1.compute_efficiency", peak),
        (f"tier1.bandwidth_efficiency.{memory_level}", bandwidth),
    ):
        if band is not None and name in metrics:
            out[f"{name}.lo"], out[f"{name}.hi"] = efficiency_band(metrics[name], band.width)
    return out


def noise_note(peak: CeilingBand | None, bandwidth: CeilingBand | None, load_per_core: float | None) -> str:
    """One line for the run's ``dabench.ceilings_noise`` tag: steady or noisy, by how much, and
    the band it put on the ceilings and efficiencies."""
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
    """``metrics`` with the measured efficiencies taken against the top of their ceiling's band
    (divided by 1 + w), as the result check must judge a measurement: above 1.0 there is a
    violation beyond the band, not noise. ``tier1.compute_efficiency`` by the peak's band,
    ``tier1.bandwidth_efficiency.<memory_level>`` by the bandwidth's, ``roofline.step.roof_share``
    by the wider. A new dict; the recorded metrics stay as computed."""
    widths = {
        "tier1.compute_efficiency": peak.width if peak else 0.0,
        f"tier1.bandwidth_efficiency.{memory_level}": bandwidth.width if bandwidth else 0.0,
        "roofline.step.roof_share": max((b.width for b in (peak, bandwidth) if b is not None), default=0.0),
    }
    out = dict(metrics)
    for name, width in widths.items():
        if name in out and width > 0:
            out[name] = out[name] / (1.0 + width)
    return out
