"""The hardware ceilings a run's efficiencies are taken against (config level: hardware.py builds
them, metrics/ uses them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ceilings:
    """Per-chip limits at the run's precision: peak FLOP/s and the main memory level's bandwidth
    (bytes/s). ``source`` says where they came from (spec sheet or calibration)."""

    peak_flops: float
    bandwidth_Bps: float
    memory_level: str
    source: str = "spec"
