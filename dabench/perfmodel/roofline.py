"""Op time on a roofline, the shared primitive of every analytical model:
``t = max(F / (P e_c), Q / (B e_m))`` seconds, efficiencies ``e_c``, ``e_m`` in (0, 1] (1.0: the
ideal roofline). Each model's efficiency values: docs/perfmodel.md.
"""

from __future__ import annotations


def op_time_s(
    flops: float,
    nbytes: float,
    peak_flops: float,
    bandwidth_Bps: float,
    compute_efficiency: float = 1.0,
    memory_efficiency: float = 1.0,
) -> float:
    """max(flops / (peak * e_c), bytes / (bandwidth * e_m)), in seconds."""
    if peak_flops <= 0 or bandwidth_Bps <= 0:
        raise ValueError(f"peak ({peak_flops}) and bandwidth ({bandwidth_Bps}) must be positive")
    if not (0 < compute_efficiency <= 1 and 0 < memory_efficiency <= 1):
        raise ValueError(f"efficiencies must lie in (0, 1], got {compute_efficiency}, {memory_efficiency}")
    return max(flops / (peak_flops * compute_efficiency), nbytes / (bandwidth_Bps * memory_efficiency))
