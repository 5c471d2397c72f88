"""Hardware ceilings for a run: peak FLOP/s at the run's precision and the main memory level's
bandwidth, from the spec (conf/hardware/*.yaml) or, where the spec says null, calibrated."""

from __future__ import annotations

from dabench.config import HardwareSpec, PrecisionConfig
from dabench.metrics.summary import Ceilings
from dabench.status import UnsupportedError


def main_memory(hw: HardwareSpec):
    """The first memory level listed with a bandwidth, or the first level when none has one."""
    for level in hw.memory:
        if level.bandwidth_Bps:
            return level
    return hw.memory[0]


def resolve_ceilings(hw: HardwareSpec, precision: PrecisionConfig) -> Ceilings:
    """Peak FLOP/s (per chip, at ``precision.name``) and main-memory bandwidth. Null entries are
    calibrated on this machine (CPU only); a precision the hardware lacks is unsupported."""
    if precision.name not in hw.precisions:
        raise UnsupportedError(f"hardware={hw.name} has no {precision.name} arithmetic "
                               f"(supports {', '.join(hw.precisions)})")
    level = main_memory(hw)
    peak = hw.peak_flops.get(precision.name)
    bandwidth = level.bandwidth_Bps
    source = "spec"
    if peak is None or bandwidth is None:
        if hw.arch != "cpu":
            raise UnsupportedError(f"hardware={hw.name} lists no peak FLOP/s for {precision.name} "
                                   f"or no bandwidth for {level.name}, and only cpu is calibrated")
        from dabench.backends import calibrate  # imports torch: only when calibration is needed

        peak = peak if peak is not None else calibrate.peak_flops(precision.compute_dtype)
        bandwidth = bandwidth if bandwidth is not None else calibrate.dram_bandwidth()
        source = "calibrated"
    return Ceilings(peak_flops=float(peak), bandwidth_Bps=float(bandwidth), memory_level=level.name, source=source)


def host_cpu_ceilings(precision: PrecisionConfig) -> Ceilings:
    """Calibrated ceilings of this machine's CPU, for backends that run here in place of the
    target (see ``Backend.runs_on_host_cpu``)."""
    from dabench.backends import calibrate

    return Ceilings(peak_flops=calibrate.peak_flops(precision.compute_dtype), bandwidth_Bps=calibrate.dram_bandwidth(),
                    memory_level="dram", source="calibrated host cpu")
