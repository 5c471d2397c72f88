"""Timing communication on a rank: an interval log, a timed DDP comm hook (per bucket, hand-off to
completion: the total in-flight time), and a dispatch mode timing each collective DTensor issues
for tensor parallelism (issued and waited at once; run only in extra steps after the timed window).
Clock marks are turned into seconds only after ``clock.synchronize()``.

Derivation: docs/distributed.md, "What is measured".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode


@dataclass(frozen=True)
class Interval:
    """One timed interval on a rank: ``kind`` (comm, exposed, compute, ...), collective ``op``,
    message ``bytes`` (0 where not a message) and ``seconds``, for timed step ``step``."""

    step: int
    kind: str
    op: str
    bytes: float
    seconds: float


class IntervalLog:
    """Clock marks for intervals, resolved to seconds after the clock is synchronized.
    ``step`` is the index of the step being recorded (None = do not record)."""

    def __init__(self, clock):
        self.clock = clock
        self.step: int | None = None
        self.last_issue: Any = None  #: mark of the latest collective issued (DDP exposed time)
        self._pending: list[tuple[int, str, str, float, Any, Any]] = []

    def add(self, kind: str, op: str, nbytes: float, start, end, step: int | None = None) -> None:
        step = self.step if step is None else step
        if step is not None:
            self._pending.append((step, kind, op, float(nbytes), start, end))

    def resolve(self) -> list[Interval]:
        """All intervals in seconds (call after ``clock.synchronize()``)."""
        elapsed = self.clock.elapsed
        return [Interval(step, kind, op, b, elapsed(start, end)) for step, kind, op, b, start, end in self._pending]

    def clear(self) -> None:
        self._pending.clear()
        self.last_issue = None


def timed_allreduce_hook(log: IntervalLog, group: dist.ProcessGroup | None, world_size: int):
    """A DDP comm hook that does what DDP's default hook does (divide the bucket by the world
    size, all-reduce it asynchronously) and logs each bucket's issue-to-completion interval."""

    def hook(state, bucket):
        buffer = bucket.buffer()
        step = log.step
        start = log.clock.mark()
        log.last_issue = start
        buffer.div_(world_size)
        nbytes = buffer.numel() * buffer.element_size()
        future = dist.all_reduce(buffer, group=group, async_op=True).get_future()

        def done(fut):
            log.add("comm", "allreduce", nbytes, start, log.clock.mark(), step)
            return fut.value()[0]

        return future.then(done)

    return hook


def ping_pong(message: torch.Tensor, peer: int, send_first: bool, reps: int, clock) -> list[float]:
    """One-way seconds (half of each round trip) of ``reps`` round trips of ``message`` with rank
    ``peer``, after one untimed; ``send_first`` on one side of the pair, not on the other."""
    times = []
    for rep in range(reps + 1):
        clock.synchronize()
        start = clock.mark()
        for send in (send_first, not send_first):
            (dist.send if send else dist.recv)(message, peer)
        end = clock.mark()
        clock.synchronize()
        if rep:
            times.append(clock.elapsed(start, end) / 2)
    return times


def _functional_collectives() -> dict[Any, str]:
    ops = torch.ops._c10d_functional
    table = {
        ops.all_reduce: "allreduce",
        ops.all_gather_into_tensor: "allgather",
        ops.reduce_scatter_tensor: "reduce_scatter",
    }
    optional = {"all_to_all_single": "alltoall", "broadcast": "broadcast"}
    table.update({getattr(ops, name): op for name, op in optional.items() if hasattr(ops, name)})
    return table


class CollectiveTimer(TorchDispatchMode):
    """Times every functional collective (what DTensor lowers its redistributions to) into an
    :class:`IntervalLog` as ``kind="comm"``. Message bytes follow the NCCL-tests convention: the
    full buffer (all-reduce: the tensor; all-gather: the gathered output; reduce-scatter: the
    input). Returning NotImplemented for DTensor arguments lets DTensor desugar into plain
    collectives first, which this mode then sees (the trick torch's CommDebugMode uses)."""

    def __init__(self, log: IntervalLog):
        super().__init__()
        self.log = log
        self._ops = _functional_collectives()
        self._wait = torch.ops._c10d_functional.wait_tensor.default

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.distributed.tensor import DTensor

        kwargs = kwargs or {}
        if any(issubclass(t, DTensor) for t in types):
            return NotImplemented
        op = self._ops.get(getattr(func, "_overloadpacket", None))
        if op is None:
            return func(*args, **kwargs)
        clock = self.log.clock
        clock.synchronize()
        start = clock.mark()
        out = func(*args, **kwargs)
        self._wait(out)
        clock.synchronize()
        end = clock.mark()
        message = out if op == "allgather" else args[0]
        self.log.add("comm", op, message.numel() * message.element_size(), start, end)
        return out
