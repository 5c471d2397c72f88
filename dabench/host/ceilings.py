"""Hardware ceilings for a run: peak FLOP/s at the run's precision and the main memory level's
bandwidth, from the spec (conf/hardware/*.yaml) or, where the spec says null, calibrated; and
what this machine's CPU is (model name, native arithmetic per precision). torch-free.

When a CPU calibration is refused (1-minute load above the limit, see
:mod:`dabench.host.calibrate`) and none is cached for the run's key, the ceilings come back
*uncalibrated*: NaN peak and bandwidth and a ``source`` starting with ``uncalibrated:`` that holds
the reason. A measured run then records no metric relative to a ceiling (efficiencies, roofline;
see :func:`dabench.metrics.checks.ceiling_metric_names`); a CPU prediction needs the ceilings and
is refused (unsupported) with that reason. A measured run's calibrated ceilings are held as bands
(:func:`measured_roof`, :mod:`dabench.host.noise`): the roof is the fastest rate the machine has
shown, and a noisy machine widens the band rather than losing the numbers. docs/metrics.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

from dabench.config.sections import HardwareSpec, PrecisionConfig
from dabench.core.ceilings import Ceilings
from dabench.core.platforms import platform
from dabench.core.status import UnsupportedError
from dabench.host.noise import CeilingBand, ceiling_band

UNCALIBRATED = "uncalibrated"  #: prefix of Ceilings.source when a calibration was refused
IN_SITU = "in-situ (probed right before and after the timed steps)"  #: Ceilings.source of validate runs on the CPU


def tf32_enabled(hw: HardwareSpec, precision: PrecisionConfig) -> bool:
    """True when the run's fp32 matmuls go to TF32 tensor cores: a platform with ``tf32`` (cuda), fp32 arithmetic
    (not autocast to 16 bits) and ``hardware.options.tf32: true``. The cuda backend sets torch's
    flag from the same knob, so predict prices what measure runs."""
    return platform(hw.arch).tf32 and precision.compute_dtype == "fp32" and bool(hw.options.get("tf32", False))


def is_calibrated(ceilings: Ceilings) -> bool:
    return not ceilings.source.startswith(UNCALIBRATED)


def main_memory(hw: HardwareSpec):
    """The first memory level listed with a bandwidth, or the first level when none has one."""
    for level in hw.memory:
        if level.bandwidth_Bps:
            return level
    return hw.memory[0]


def resolve_ceilings(hw: HardwareSpec, precision: PrecisionConfig) -> Ceilings:
    """Peak FLOP/s (per chip, at ``precision.name``; at ``peak_flops.tf32`` for fp32 with TF32 on,
    see :func:`tf32_enabled`) and main-memory bandwidth. Null entries are calibrated on this
    machine (CPU only; uncalibrated when refused, see the module doc); a precision the hardware
    lacks is unsupported."""
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
        from dabench.host import calibrate  # imports torch: only when calibration is needed

        try:
            peak = peak if peak is not None else calibrate.peak_flops(precision.compute_dtype)
            bandwidth = bandwidth if bandwidth is not None else calibrate.dram_bandwidth()
        except calibrate.CalibrationRefused as refused:
            return Ceilings(math.nan, math.nan, level.name, f"{UNCALIBRATED}: {refused}")
        source = "calibrated"
    return Ceilings(peak_flops=float(peak), bandwidth_Bps=float(bandwidth), memory_level=level.name, source=source)


def can_probe(hw: HardwareSpec, strategy: str) -> bool:
    """Whether this machine's CPU ceilings can be probed around a run (:func:`dabench.host.calibrate.probe`):
    single-process runs of the cpu backend whose ceilings are calibrated, not set in the config."""
    return (
        platform(hw.arch).host_cpu
        and hw.backend in platform(hw.arch).host_backends
        and strategy == "none"
        and not any(hw.peak_flops.values())
        and main_memory(hw).bandwidth_Bps is None
    )


def uses_in_situ_ceilings(hw: HardwareSpec, mode: str, strategy: str) -> bool:
    """Whether a run compares itself with ceilings probed around it (:func:`in_situ_ceilings`):
    validate runs that :func:`can_probe` (the caller also requires the calibration to have been
    accepted)."""
    return mode == "validate" and can_probe(hw, strategy)


def in_situ_ceilings(ceilings: Ceilings, before, after) -> tuple[Ceilings, dict[str, float]]:
    """What a validate run is priced at, from two :class:`dabench.host.calibrate.Probe` readings
    that bracket it: ``(model, metrics)``. ``model`` is the probes' mean (the machine as the run
    met it); ``metrics`` are ``validate.ceilings_drift`` ((after - before) / mean of the peak),
    ``validate.probed_peak_flops``, ``validate.probed_bandwidth_Bps`` and
    ``validate.peak_vs_calibrated`` (probed / calibrated peak - 1). The roof the run is taken
    against is :func:`measured_roof` with both probes. ``ceilings`` must be calibrated."""
    from dabench.host.calibrate import combine_probes

    mean, drift = combine_probes(before, after)
    metrics = {
        "validate.ceilings_drift": drift,
        "validate.probed_peak_flops": mean.peak_flops,
        "validate.probed_bandwidth_Bps": mean.bandwidth_Bps,
        "validate.peak_vs_calibrated": mean.peak_flops / ceilings.peak_flops - 1,
    }
    return Ceilings(mean.peak_flops, mean.bandwidth_Bps, ceilings.memory_level, IN_SITU), metrics


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
    """:class:`MeasuredRoof` of ``ceilings`` from the calibrations that made them (``(gemm, copy)``,
    :class:`dabench.host.calibrate.Calibration` or None) and the in-situ ``probes``. A calibration
    whose median is not the ceiling's value (the spec set it) gives that ceiling no band. Pure."""
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
    """:func:`roof_of` with this process's calibrations at compute dtype ``dtype`` (no band for
    ceilings that are uncalibrated or from the spec)."""
    if not is_calibrated(ceilings) or "calibrated" not in ceilings.source:
        return MeasuredRoof(ceilings, None, None)
    from dabench.host import calibrate

    return roof_of(ceilings, (calibrate.calibration(f"gemm_{dtype}"), calibrate.calibration("copy")), probes)


class WindowProbes:
    """The ``on_timed_window`` callback of an in-situ run (:func:`uses_in_situ_ceilings`): each
    call probes this CPU's ceilings (:func:`dabench.host.calibrate.probe` at ``dtype``); a window
    timed again starts its readings afresh."""

    def __init__(self, dtype: str):
        self.dtype = dtype
        self.readings: list = []

    def __call__(self, when: str) -> None:
        from dabench.host.calibrate import probe

        if when == "before":
            self.readings = []
        self.readings.append(probe(self.dtype))

    def ceilings(self, calibrated: Ceilings) -> tuple[Ceilings, dict[str, float]] | None:
        """:func:`in_situ_ceilings` of the two readings, or None when the backend timed no window
        in this process (the cached calibration then stays)."""
        if len(self.readings) != 2:
            return None
        return in_situ_ceilings(calibrated, *self.readings)


def host_cpu_ceilings(precision: PrecisionConfig) -> Ceilings:
    """Calibrated ceilings of this machine's CPU, for backends that run here in place of the
    target (a platform record's ``host_backends``)."""
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
