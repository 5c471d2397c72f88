"""Hardware ceilings for a run: peak FLOP/s at its precision and main-memory bandwidth, from the
spec or, where it says null, calibrated on this CPU. A refused calibration with none cached gives
*uncalibrated* ceilings (NaN, the reason in ``source``); a measured run's calibrated ceilings are
held as bands (:func:`measured_roof`, :mod:`dabench.host.noise`). docs/metrics.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from dabench.config.sections import HardwareSpec, PrecisionConfig
from dabench.core.ceilings import Ceilings
from dabench.core.platforms import platform
from dabench.core.status import UnsupportedError
from dabench.host.noise import CeilingBand, ceiling_band

UNCALIBRATED = "uncalibrated"  #: prefix of Ceilings.source when a calibration was refused
IN_SITU = "in-situ (probed right before and after the timed steps)"  #: Ceilings.source of validate runs on the CPU


def tf32_enabled(hw: HardwareSpec, precision: PrecisionConfig) -> bool:
    """Whether the run's fp32 matmuls go to TF32 units: a ``tf32`` platform, fp32 arithmetic and
    ``hardware.options.tf32: true`` (the knob the cuda backend sets torch's flag from)."""
    return platform(hw.arch).tf32 and precision.compute_dtype == "fp32" and bool(hw.options.get("tf32", False))


def is_calibrated(ceilings: Ceilings) -> bool:
    return not ceilings.source.startswith(UNCALIBRATED)


def main_memory(hw: HardwareSpec):
    """The first memory level listed with a bandwidth, or the first level when none has one."""
    return next((level for level in hw.memory if level.bandwidth_Bps), hw.memory[0])


def resolve_ceilings(hw: HardwareSpec, precision: PrecisionConfig) -> Ceilings:
    """Peak FLOP/s per chip at the run's precision (``tf32`` where :func:`tf32_enabled`) and
    main-memory bandwidth; null entries calibrated (CPU only); a missing precision unsupported."""
    if precision.name not in hw.precisions:
        raise UnsupportedError(
            f"hardware={hw.name} has no {precision.name} arithmetic (supports {', '.join(hw.precisions)})"
        )
    level = main_memory(hw)
    peak = hw.peak_flops.get(precision.name)
    bandwidth = level.bandwidth_Bps
    source = "spec"
    if tf32_enabled(hw, precision):
        if not hw.peak_flops.get("tf32"):
            raise UnsupportedError(f"hardware={hw.name}: options.tf32 is true but peak_flops lists no tf32 rate")
        peak, source = hw.peak_flops["tf32"], "spec (tf32)"
    if peak is None or bandwidth is None:
        if not platform(hw.arch).host_cpu:
            raise UnsupportedError(
                f"hardware={hw.name} lists no peak FLOP/s for {precision.name} "
                f"or no bandwidth for {level.name}, and only cpu is calibrated"
            )
        from dabench.host import calibrate  # imports torch

        try:
            peak = peak if peak is not None else calibrate.peak_flops(precision.compute_dtype)
            bandwidth = bandwidth if bandwidth is not None else calibrate.dram_bandwidth()
        except calibrate.CalibrationRefused as refused:
            return Ceilings(math.nan, math.nan, level.name, f"{UNCALIBRATED}: {refused}")
        source = "calibrated"
    return Ceilings(peak_flops=float(peak), bandwidth_Bps=float(bandwidth), memory_level=level.name, source=source)


def can_probe(hw: HardwareSpec, strategy: str) -> bool:
    """Whether this CPU's ceilings can be probed around a run: a single process on a host backend,
    its ceilings calibrated rather than set in the config."""
    return (
        platform(hw.arch).host_cpu
        and hw.backend in platform(hw.arch).host_backends
        and strategy == "none"
        and not any(hw.peak_flops.values())
        and main_memory(hw).bandwidth_Bps is None
    )


def in_situ_ceilings(ceilings: Ceilings, before, after) -> tuple[Ceilings, dict[str, float]]:
    """``(ceilings, validate.* metrics)`` of a validate run from the two probes that bracket it:
    the probes' mean, their peak's drift, (after - before) / mean, and the probed peak against the
    calibrated one."""
    peak = (before.peak_flops + after.peak_flops) / 2
    bandwidth = (before.bandwidth_Bps + after.bandwidth_Bps) / 2
    metrics = {
        "validate.ceilings_drift": (after.peak_flops - before.peak_flops) / peak,
        "validate.probed_peak_flops": peak,
        "validate.probed_bandwidth_Bps": bandwidth,
        "validate.peak_vs_calibrated": peak / ceilings.peak_flops - 1,
    }
    return Ceilings(peak, bandwidth, ceilings.memory_level, IN_SITU), metrics


@dataclass(frozen=True)
class MeasuredRoof:
    """A measured run's ceilings as bands (:func:`measured_roof`)."""

    roof: Ceilings  #: the fastest rates shown: what efficiencies and roofline points are taken against
    peak: CeilingBand | None  #: None where the peak was not calibrated here (spec)
    bandwidth: CeilingBand | None  #: None where the bandwidth was not calibrated here (spec)

    @property
    def check_roof(self) -> Ceilings:
        """The ceilings a measured roofline point must stay under: the bands' upper ends."""
        return replace(
            self.roof,
            peak_flops=self.peak.hi if self.peak else self.roof.peak_flops,
            bandwidth_Bps=self.bandwidth.hi if self.bandwidth else self.roof.bandwidth_Bps,
        )


def roof_of(ceilings: Ceilings, calibrations: Sequence, probes: Sequence = ()) -> MeasuredRoof:
    """:class:`MeasuredRoof` of ``ceilings`` from the ``(gemm, copy)`` calibrations that made them
    and the in-situ ``probes``; a ceiling the spec set gets no band. Pure."""
    gemm, copy = calibrations
    peak = bandwidth = None
    if gemm is not None and gemm.value == ceilings.peak_flops:
        peak = ceiling_band([*(gemm.samples or (gemm.value,)), *(x for p in probes for x in p.peak_samples)])
    if copy is not None and copy.value == ceilings.bandwidth_Bps:
        bandwidth = ceiling_band([*(copy.samples or (copy.value,)), *(x for p in probes for x in p.bandwidth_samples)])
    if peak is None and bandwidth is None:
        return MeasuredRoof(ceilings, None, None)
    where = "calibration repeats and in-situ probes" if probes else "calibration repeats"
    roof = Ceilings(
        peak.roof if peak else ceilings.peak_flops,
        bandwidth.roof if bandwidth else ceilings.bandwidth_Bps,
        ceilings.memory_level,
        f"{ceilings.source}; roof = fastest of the {where}",
    )
    return MeasuredRoof(roof, peak, bandwidth)


def measured_roof(ceilings: Ceilings, dtype: str, probes: Sequence = ()) -> MeasuredRoof:
    """:func:`roof_of` with this process's calibrations at compute dtype ``dtype``."""
    if not is_calibrated(ceilings) or "calibrated" not in ceilings.source:
        return MeasuredRoof(ceilings, None, None)
    from dabench.host import calibrate

    return roof_of(ceilings, (calibrate.calibration(f"gemm_{dtype}"), calibrate.calibration("copy")), probes)


@dataclass
class WindowProbes:
    """The ``on_timed_window`` callback of an in-situ run: probes before and after each window."""

    dtype: str
    readings: list = field(default_factory=list)

    def __call__(self, when: str) -> None:
        from dabench.host.calibrate import probe

        if when == "before":
            self.readings = []
        self.readings.append(probe(self.dtype))

    def ceilings(self, calibrated: Ceilings) -> tuple[Ceilings, dict[str, float]] | None:
        """:func:`in_situ_ceilings` of the two readings, or None when no window was timed here."""
        if len(self.readings) != 2:
            return None
        return in_situ_ceilings(calibrated, *self.readings)


def host_cpu_ceilings(precision: PrecisionConfig) -> Ceilings:
    """Calibrated ceilings of this CPU, for backends that run here in place of the target."""
    from dabench.host import calibrate

    try:
        return Ceilings(
            peak_flops=calibrate.peak_flops(precision.compute_dtype),
            bandwidth_Bps=calibrate.dram_bandwidth(),
            memory_level="dram",
            source="calibrated host cpu",
        )
    except calibrate.CalibrationRefused as refused:
        return Ceilings(math.nan, math.nan, "dram", f"{UNCALIBRATED}: {refused}")
