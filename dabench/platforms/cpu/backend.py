"""The CPU reference backend: real torch execution on this machine's cores."""

from __future__ import annotations

import logging
import resource

from dabench.backends.base import Availability, Backend, TimedWindowCallback
from dabench.config.sections import RunConfig
from dabench.core.profile import Profile, UnitUse
from dabench.host.conditions import allowed_cpus
from dabench.host.info import cpu_native_precision
from dabench.workload.opgraph import OpGraph

log = logging.getLogger(__name__)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux reports KiB). Process-wide: it includes the
    interpreter and libraries, not only the workload."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class CpuBackend(Backend):
    """Cores allocated = torch threads (set by the pipeline: ``run.threads``, default the CPUs this
    process may use); available = the CPUs it may use (affinity, cgroup quota)."""

    name = "cpu"
    torch_distributed = True

    def parallel_target(self, rc: RunConfig):
        import torch

        return torch.device("cpu"), "cpu"

    @classmethod
    def availability(cls, rc: RunConfig) -> Availability:
        return Availability(True)

    def run(self, rc: RunConfig, graph: OpGraph, on_timed_window: TimedWindowCallback | None = None) -> Profile:
        import torch

        from dabench.backends.measure import HostClock
        from dabench.backends.torch_device import run_on_device

        native = cpu_native_precision(rc.precision.compute_dtype)
        if not native:
            log.warning(
                "this CPU has no native %s arithmetic (no AVX512/AMX %s in /proc/cpuinfo): torch emulates it, "
                "so the run measures the emulated rate",
                rc.precision.compute_dtype,
                rc.precision.compute_dtype,
            )
        allowed = allowed_cpus()  # more threads than that still occupy only the cores the process may use
        units = {"cores": UnitUse(min(torch.get_num_threads(), allowed), allowed)}
        tags = {"precision_native": "true" if native else "false"}
        cpu = torch.device("cpu")
        return run_on_device(rc, cpu, HostClock(), units, "cpu", "dram", peak_rss_bytes, tags, on_timed_window)
