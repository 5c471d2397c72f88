"""The hardware ceilings a run's efficiencies are taken against."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ceilings:
    """Per-chip peak FLOP/s at the run's precision and main-memory bytes/s, and where they came from."""

    peak_flops: float
    bandwidth_Bps: float
    memory_level: str
    source: str = "spec"
