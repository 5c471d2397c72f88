"""Roofline points: arithmetic intensity against achieved and attainable FLOP/s."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RooflinePoint:
    """One point: ``intensity`` in FLOPs/byte (at one memory level), ``achieved`` FLOP/s (None
    when only the op's position is known), ``attainable`` = min(peak, intensity * bandwidth)."""

    name: str
    intensity: float
    achieved: float | None
    attainable: float
    flops: float
    bytes: float
    ridge: float  #: intensity where the roofs meet, peak / bandwidth (FLOP/B)

    @property
    def bound(self) -> str:
        """``memory`` left of the ridge point, ``compute`` on or right of it."""
        return "compute" if self.intensity >= self.ridge else "memory"


def attainable_flops(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """The roofline: attainable FLOP/s = min(peak FLOP/s, intensity [FLOP/B] * bandwidth [B/s])."""
    return min(peak_flops, intensity * bandwidth)


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/B) where the memory roof meets the compute roof: peak / bandwidth."""
    return peak_flops / bandwidth


def point(
    name: str, flops: float, moved_bytes: float, seconds: float | None, peak_flops: float, bandwidth: float
) -> RooflinePoint:
    """A roofline point for work of ``flops`` moving ``moved_bytes`` that took ``seconds``."""
    intensity = flops / moved_bytes if moved_bytes else 0.0
    achieved = flops / seconds if seconds else None
    attainable = attainable_flops(intensity, peak_flops, bandwidth)
    return RooflinePoint(name, intensity, achieved, attainable, flops, moved_bytes, ridge_point(peak_flops, bandwidth))
