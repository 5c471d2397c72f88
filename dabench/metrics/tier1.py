"""Tier 1 (intra-chip) metrics as pure functions. Formulas also in docs/metrics.md."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence


def allocation_ratio(allocated: float, available: float) -> float:
    """Resource allocation ratio RA = units allocated / units available (cores, SMs, PEs, PCUs,
    PMUs, tiles). Dimensionless, in [0, 1] for a valid allocation."""
    if available <= 0:
        raise ValueError(f"available units must be positive, got {available}")
    if allocated < 0:
        raise ValueError(f"allocated units must be non-negative, got {allocated}")
    return allocated / available


def allocation_metrics(units: Mapping[str, Any]) -> dict[str, float]:
    """``tier1.allocation_ratio.<kind>``: RA per resource kind of ``units`` (each with ``allocated``
    and ``available``), and ``tier1.allocation_ratio``: the first kind's."""
    ratios = {f"tier1.allocation_ratio.{k}": allocation_ratio(u.allocated, u.available) for k, u in units.items()}
    return {"tier1.allocation_ratio": next(iter(ratios.values())), **ratios}


def load_imbalance(times: Sequence[float]) -> float:
    """Load imbalance LI = mean(t_i) / max(t_i) over subtasks i. 1.0 is perfect balance; the
    slowest subtask bounds throughput, so LI is the share of the bound the average subtask uses.
    For sources that report rates r_i (work per second), pass t_i = 1 / r_i."""
    values = [float(t) for t in times]
    if not values:
        raise ValueError("load imbalance needs at least one subtask")
    if any(t < 0 for t in values):
        raise ValueError(f"subtask times must be non-negative, got {values}")
    longest = max(values)
    if longest == 0:
        return 1.0
    return min(1.0, (sum(values) / len(values)) / longest)


def compute_efficiency(achieved_flops_per_s: float, peak_flops_per_s: float) -> float:
    """Compute (utilization) efficiency = achieved FLOP/s / peak FLOP/s at the run's precision
    (model FLOPs utilization, MFU). Achieved = FLOPs per step / step time."""
    if peak_flops_per_s <= 0:
        raise ValueError(f"peak FLOP/s must be positive, got {peak_flops_per_s}")
    return achieved_flops_per_s / peak_flops_per_s


def bandwidth_efficiency(achieved_bytes_per_s: float, peak_bytes_per_s: float) -> float:
    """Memory-bandwidth efficiency = achieved bytes/s / peak bytes/s of one memory level.
    Achieved = bytes moved per step (the op graph's minimum-traffic model) / step time."""
    if peak_bytes_per_s <= 0:
        raise ValueError(f"peak bandwidth must be positive, got {peak_bytes_per_s}")
    return achieved_bytes_per_s / peak_bytes_per_s


def percentile(values: Iterable[float], q: float) -> float:
    """Linear-interpolation percentile (q in [0, 100]), as numpy's default."""
    data = sorted(float(v) for v in values)
    if not data:
        raise ValueError("percentile of no values")
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)
