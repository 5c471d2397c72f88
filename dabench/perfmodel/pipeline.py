"""Pipeline schedule with bubble for m micro-batches over p stages (:func:`pipeline_time`,
:func:`stash_depth`). Derivation: docs/perfmodel.md, "Shared primitives".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class PipelineTiming:
    step_s: float  #: time for all m micro-batches to finish forward and backward
    bubble_s: float  #: idle time of the bottleneck stage: step - m * max t_i
    bottleneck: int  #: index of the slowest stage


def pipeline_time(stage_times: Sequence[float], micro_batches: int) -> PipelineTiming:
    """Step time and bubble of a pipeline (formula: module docstring)."""
    if micro_batches < 1:
        raise ValueError(f"micro_batches must be at least 1, got {micro_batches}")
    if not stage_times:
        raise ValueError("a pipeline needs at least one stage")
    if any(t < 0 for t in stage_times):
        raise ValueError(f"stage times must be non-negative, got {list(stage_times)}")
    slowest = max(stage_times)
    step = sum(stage_times) + (micro_batches - 1) * slowest
    return PipelineTiming(step, step - micro_batches * slowest, list(stage_times).index(slowest))


def stash_depth(stage: int, stages: int, micro_batches: int, schedule: str) -> int:
    """Micro-batches whose activations stage ``stage`` (0-based) holds at once under ``schedule``
    (``gpipe``, ``1f1b``, ``interleaved``; docs/perfmodel.md, "Shared primitives")."""
    if not 0 <= stage < stages:
        raise ValueError(f"stage {stage} outside 0..{stages - 1}")
    if schedule == "gpipe":
        return micro_batches
    if schedule == "1f1b":
        return min(micro_batches, stages - stage)
    if schedule == "interleaved":
        return min(micro_batches, 2 * (stages - 1 - stage) + 1)
    raise ValueError(f"unknown pipeline schedule {schedule!r}; known: gpipe, 1f1b, interleaved")
