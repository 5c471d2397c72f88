"""Tier 2 (inter-chip) metrics as pure functions. Formulas also in docs/metrics.md."""

from __future__ import annotations

from typing import Iterable


def scaling_efficiency(throughput_n: float, throughput_1: float, n: int) -> float:
    """Scaling efficiency = throughput on n chips / (n * throughput on one chip). 1.0 is linear
    scaling; the same global batch is used for both when comparing strong scaling."""
    if n < 1:
        raise ValueError(f"chip count must be at least 1, got {n}")
    if throughput_1 <= 0:
        raise ValueError(f"single-chip throughput must be positive, got {throughput_1}")
    return throughput_n / (n * throughput_1)


def comm_fraction(comm_time_s: float, step_time_s: float) -> float:
    """Communication share of the step: time in (exposed) communication / step time, in [0, 1]."""
    if step_time_s <= 0:
        raise ValueError(f"step time must be positive, got {step_time_s}")
    return min(1.0, max(0.0, comm_time_s / step_time_s))


def bus_bandwidth(op: str, bytes_per_rank: float, time_s: float, ranks: int) -> float:
    """Achieved bus bandwidth in bytes/s, the NCCL-tests convention: algbw = bytes / time, times
    2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter, 1 for point-to-point."""
    if time_s <= 0:
        raise ValueError(f"time must be positive, got {time_s}")
    algbw = bytes_per_rank / time_s
    factor = {
        "allreduce": 2.0 * (ranks - 1) / ranks,
        "allgather": (ranks - 1) / ranks,
        "reduce_scatter": (ranks - 1) / ranks,
    }.get(op, 1.0)
    return algbw * factor


def pipeline_bubble_fraction(stages: int, micro_batches: int) -> float:
    """GPipe/1F1B bubble share of a step with equal stages: (p - 1) / (m + p - 1)."""
    if stages < 1 or micro_batches < 1:
        raise ValueError("stages and micro_batches must be at least 1")
    return (stages - 1) / (micro_batches + stages - 1)


def strategy_breakdown(events: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Sum (strategy, seconds) pairs into {strategy: seconds}."""
    totals: dict[str, float] = {}
    for strategy, seconds in events:
        totals[strategy] = totals.get(strategy, 0.0) + seconds
    return totals
