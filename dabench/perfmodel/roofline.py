"""Op time on a roofline: the shared compute/bandwidth primitive of every analytical model.

An op doing F FLOPs and moving Q bytes on a unit with peak P FLOP/s and bandwidth B bytes/s
takes

    t = max(F / (P * e_c), Q / (B * e_m))

seconds: compute and data movement overlap, and the slower one sets the time. ``e_c`` and
``e_m`` are efficiency terms in (0, 1]: the share of the peak (or of the bandwidth) that real
kernels of that kind reach. Each model documents the values it uses and where they come from
(docs/perfmodel.md); 1.0 means the ideal roofline.
"""

from __future__ import annotations


def op_time_s(flops: float, nbytes: float, peak_flops: float, bandwidth_Bps: float,
              compute_efficiency: float = 1.0, memory_efficiency: float = 1.0) -> float:
    """max(flops / (peak * e_c), bytes / (bandwidth * e_m)), in seconds."""
    if peak_flops <= 0 or bandwidth_Bps <= 0:
        raise ValueError(f"peak ({peak_flops}) and bandwidth ({bandwidth_Bps}) must be positive")
    if not (0 < compute_efficiency <= 1 and 0 < memory_efficiency <= 1):
        raise ValueError(f"efficiencies must lie in (0, 1], got {compute_efficiency}, {memory_efficiency}")
    return max(flops / (peak_flops * compute_efficiency), nbytes / (bandwidth_Bps * memory_efficiency))


def compute_time_s(flops: float, peak_flops: float, efficiency: float = 1.0) -> float:
    """flops / (peak * efficiency): the compute roof alone."""
    return op_time_s(flops, 0.0, peak_flops, 1.0, efficiency, 1.0)


def transfer_time_s(nbytes: float, bandwidth_Bps: float, efficiency: float = 1.0) -> float:
    """bytes / (bandwidth * efficiency): the memory roof alone."""
    return op_time_s(0.0, nbytes, 1.0, bandwidth_Bps, 1.0, efficiency)
