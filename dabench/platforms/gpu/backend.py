"""The CUDA backend: real torch execution on an NVIDIA GPU, or an AMD one under a ROCm build of torch
(the same torch.cuda API), timed with CUDA events; the run records the vendor, runtime and device."""

from __future__ import annotations

from dabench.backends.base import Availability, Backend, TimedWindowCallback
from dabench.config.sections import FP8, RunConfig
from dabench.core.profile import Profile, UnitUse
from dabench.host.ceilings import tf32_enabled
from dabench.host.info import gpu_identity
from dabench.workload.opgraph import OpGraph


class CudaBackend(Backend):
    """SMs allocated = SMs visible to this process (fewer under MIG); available = the spec's SM
    count for the full chip (conf/hardware/cuda.yaml)."""

    name = "cuda"
    torch_distributed = True

    @classmethod
    def availability(cls, rc: RunConfig) -> Availability:
        try:
            import torch
        except ImportError:
            return Availability(False, "torch is not installed")
        if not torch.cuda.is_available():
            return Availability(False, "no CUDA device is visible (torch.cuda.is_available() is False)")
        if rc.precision.name == FP8:
            from dabench.backends.torch_train import fp8_unsupported

            why = fp8_unsupported(torch.device("cuda", torch.cuda.current_device()))
            if why:
                return Availability(False, why)
        return Availability(True)

    def parallel_target(self, rc: RunConfig):
        import torch

        device = torch.device("cuda", torch.cuda.current_device())
        return device, f"cuda:{torch.cuda.get_device_properties(device).name}"

    def run(self, rc: RunConfig, graph: OpGraph, on_timed_window: TimedWindowCallback | None = None) -> Profile:
        import torch

        from dabench.backends.measure import CudaClock
        from dabench.backends.torch_device import run_on_device

        # the math mode the analytical model prices; build_train_state sets torch's flags from it
        tf32 = tf32_enabled(rc.hardware, rc.precision)
        device = torch.device("cuda", torch.cuda.current_device())
        props = torch.cuda.get_device_properties(device)
        spec_sms = rc.hardware.units("sms") or props.multi_processor_count
        units = {"sms": UnitUse(props.multi_processor_count, max(spec_sms, props.multi_processor_count))}
        torch.cuda.reset_peak_memory_stats(device)
        peak = lambda: torch.cuda.max_memory_allocated(device)
        tags = {"tf32": "true" if tf32 else "false", **gpu_identity(torch)}  # a ROCm build runs here unchanged
        return run_on_device(
            rc, device, CudaClock(device), units, f"cuda:{props.name}", "hbm", peak, tags, on_timed_window
        )
