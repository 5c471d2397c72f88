"""Collective micro-benchmarks on the job's process group backend (gloo on CPU): all-reduce and
send/recv bus bandwidth per message size. The rank side of ``benchmarks/collectives.py``.
Method (as NCCL-tests): docs/distributed.md.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist

from dabench.backends.measure import HostClock
from dabench.distributed.commtime import ping_pong
from dabench.distributed.worker import RankEnv, process_group
from dabench.metrics.tier2 import bus_bandwidth

BYTES_PER_SIZE_BUDGET = 256 * 2**20  #: reps per size = budget / size, within [MIN_REPS, MAX_REPS]
MIN_REPS, MAX_REPS = 3, 50


def reps_for(size_bytes: int) -> int:
    return max(MIN_REPS, min(MAX_REPS, BYTES_PER_SIZE_BUDGET // size_bytes))


def _time_allreduce(buf: torch.Tensor, reps: int) -> float:
    dist.all_reduce(buf)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(reps):
        dist.all_reduce(buf)
    return (time.perf_counter() - start) / reps


def _time_sendrecv(buf: torch.Tensor, reps: int, rank: int, world: int) -> float | None:
    """One-way seconds per message between this rank and its partner (None without partner)."""
    partner = rank ^ 1
    dist.barrier()
    if partner >= world:
        return None
    times = ping_pong(buf, partner, rank % 2 == 0, reps, HostClock())
    return sum(times) / len(times)


def measure_collectives(payload: dict[str, Any], env: RankEnv) -> dict[str, Any]:
    """Rank target: {"allreduce": {size: seconds}, "sendrecv": {size: seconds}} for this rank."""
    torch.set_num_threads(int(payload.get("threads", 1)))
    out: dict[str, dict[str, float | None]] = {"allreduce": {}, "sendrecv": {}}
    with process_group(env):
        for size in payload["sizes"]:
            buf = torch.ones(size // 4, dtype=torch.float32)
            out["allreduce"][str(size)] = _time_allreduce(buf, reps_for(size))
            out["sendrecv"][str(size)] = _time_sendrecv(buf, reps_for(size), env.rank, env.world_size)
        dist.barrier()
    return out


def summarize(per_rank: list[dict[str, Any]], ranks: int) -> list[dict[str, float | str | int]]:
    """Rows (op, ranks, size, time, algbw, busbw) from all ranks' timings (slowest rank)."""
    rows = []
    for op, tier2_op in (("allreduce", "allreduce"), ("sendrecv", "p2p")):
        for size in per_rank[0][op]:
            seconds = max(r[op][size] for r in per_rank if r[op][size] is not None)
            busbw = bus_bandwidth(tier2_op, int(size), seconds, ranks if op == "allreduce" else 2) / 1e9
            row = {"op": op, "ranks": ranks, "bytes": int(size), "time_us": seconds * 1e6}
            rows.append({**row, "algbw_GBps": int(size) / seconds / 1e9, "busbw_GBps": busbw})
    return rows
