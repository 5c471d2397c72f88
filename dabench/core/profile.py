"""The Profile: what one run saw (measured) or would see (predicted), before any metric; backends,
models and artifact parsers produce it, :mod:`dabench.metrics` turns it into metrics."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class UnitUse:
    """Compute units of one kind: how many the workload was given, out of how many."""

    allocated: float
    available: float


@dataclass
class Subtask:
    """The unit whose balance is judged (layer, stage, kernel or section): ``time_s`` per step or
    ``rate`` in samples/s, ``units`` allocated per kind, ``flops`` per step."""

    name: str
    time_s: float | None = None
    rate: float | None = None
    units: dict[str, float] = field(default_factory=dict)
    flops: float | None = None


@dataclass
class CommEvent:
    """Communication per optimizer step: ``bytes`` per call, ``count`` calls, ``time_s`` in total."""

    strategy: str
    op: str
    bytes: float
    time_s: float
    ranks: int
    count: int = 1


@dataclass
class Profile:
    mode: str  #: "measure" or "predict"
    source: str  #: backend, model or artifact format that produced it
    step_times_s: list[float]  #: one entry per timed optimizer step
    samples_per_step: int
    tokens_per_step: int
    chips: int = 1
    units: dict[str, UnitUse] = field(default_factory=dict)
    subtasks: list[Subtask] = field(default_factory=list)
    memory_bytes: dict[str, float] = field(default_factory=dict)  #: peak use per memory level
    comm: list[CommEvent] = field(default_factory=list)
    class_times_s: dict[str, float] = field(default_factory=dict)  #: per op class, per step
    bottleneck: str | None = None
    single_chip_samples_per_s: float | None = None  #: baseline for Tier-2 scaling efficiency
    extra_metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)

    @property
    def median_step_s(self) -> float:
        return statistics.median(self.step_times_s)

    @property
    def samples_per_s(self) -> float:
        return self.samples_per_step / self.median_step_s

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.median_step_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
