"""The hpu backend: real torch execution on an Intel Gaudi through Intel's PyTorch bridge
(``habana_frameworks.torch``, device ``hpu``), in this process as the cuda backend runs.

In lazy mode (``PT_HPU_LAZY_MODE=1``) ops only accumulate until ``htcore.mark_step()`` hands them to
the graph compiler and the device; ``mark_step`` does not wait for the device, ``torch.hpu.synchronize()``
does. So each clock mark flushes the step's graph and waits, and a step's time is the wall time of
building, compiling (warm-up only: the graph is cached) and running it. Per-layer times are not
taken: marks inside a step would cut the graph the compiler fuses. Without the bridge or a device
the backend is unavailable and says why (``hardware.mode=measure`` is then ``unsupported``).
"""

from __future__ import annotations

import dataclasses
import os
import time

from dabench.backends.base import Availability, Backend, TimedWindowCallback
from dabench.config.sections import RunConfig
from dabench.core.profile import Profile
from dabench.workload.opgraph import OpGraph

BRIDGE = "habana_frameworks.torch.core"  #: importing it registers the hpu device and torch.hpu


class HpuClock:
    """Host wall clock at device-synchronized graph boundaries (module docstring)."""

    def __init__(self, htcore, hpu):
        self.htcore, self.hpu = htcore, hpu

    def mark(self) -> float:
        self.synchronize()
        return time.perf_counter()

    def elapsed(self, start: float, end: float) -> float:
        return end - start

    def synchronize(self) -> None:
        self.htcore.mark_step()
        self.hpu.synchronize()


class HpuBackend(Backend):
    name = "hpu"

    @classmethod
    def availability(cls, rc: RunConfig) -> Availability:
        try:
            import habana_frameworks.torch.core  # noqa: F401
            import torch
        except ImportError as error:
            return Availability(
                False,
                f"no Gaudi device: Intel's PyTorch bridge is not installed ({BRIDGE}: {error}); install the Intel "
                "Gaudi software stack on a Gaudi host, or predict with hardware.mode=predict",
            )
        if not torch.hpu.is_available():
            return Availability(False, "no Gaudi device is visible (torch.hpu.is_available() is False)")
        return Availability(True)

    def run(self, rc: RunConfig, graph: OpGraph, on_timed_window: TimedWindowCallback | None = None) -> Profile:
        import habana_frameworks.torch.core as htcore
        import torch

        from dabench.backends.torch_device import run_on_device

        rc = dataclasses.replace(rc, run=dataclasses.replace(rc.run, profile_subtasks=False))
        device = torch.device("hpu")
        name = torch.hpu.get_device_name()
        torch.hpu.reset_peak_memory_stats()
        tags = {"hpu.lazy_mode": os.environ.get("PT_HPU_LAZY_MODE", "default"), "hpu.device": name}
        clock = HpuClock(htcore, torch.hpu)
        peak = torch.hpu.max_memory_allocated
        return run_on_device(rc, device, clock, {}, f"hpu:{name}", "hbm", peak, tags, on_timed_window)
