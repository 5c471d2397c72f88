"""What a measured backend is: something that can say whether it is available here, and run
one configured workload into a :class:`~dabench.core.profile.Profile`. It never logs to MLflow."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from dabench.config.sections import RunConfig
from dabench.core.profile import Profile
from dabench.workload.opgraph import OpGraph

#: called with ``"before"`` right after the warm-up and ``"after"`` right after the timed window,
#: outside its clock marks (validate mode probes the CPU's ceilings there)
TimedWindowCallback = Callable[[str], None]


@dataclass(frozen=True)
class Availability:
    """Whether a backend can measure on this machine; ``reason`` says what is missing and how
    to fix it (e.g. which SDK, and how to point ``hardware.python`` at its environment)."""

    ok: bool
    reason: str = ""


class Backend(ABC):
    """A measured execution target (cpu, cuda, poptorch, cstorch, sambaflow)."""

    name: ClassVar[str]
    #: True when a parallel run (parallel.strategy != none) of this backend is measured on
    #: torch.distributed ranks (dabench.distributed); the runner dispatches it there with
    #: :meth:`parallel_target`, so backends never import dabench.distributed
    torch_distributed: ClassVar[bool] = False

    def parallel_target(self, rc: RunConfig) -> tuple[Any, str]:
        """(torch device, source label) for a torch.distributed run; see ``torch_distributed``."""
        raise NotImplementedError(f"backend {self.name} does not run on torch.distributed")

    @classmethod
    @abstractmethod
    def availability(cls, rc: RunConfig) -> Availability:
        """Cheap check (no model is built): is the device and its software present?"""

    @abstractmethod
    def run(self, rc: RunConfig, graph: OpGraph, on_timed_window: TimedWindowCallback | None = None) -> Profile:
        """Warm up, time ``rc.run.timed_steps`` optimizer steps, collect subtask times and memory
        (``on_timed_window`` only where timed in this process). Raises a DabenchError but for ok."""
