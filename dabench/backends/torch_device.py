"""A measured run on a torch device: the body shared by the cpu and cuda backends.

The model's build, warm-up, timed, per-layer and op-profile steps run in one worker thread
(:func:`dabench.runtime.interrupts.in_worker`: Ctrl-C or SIGTERM ends the run within a second),
the profiler started once on this thread first. A last window still unsteady puts its reason in
the Profile's ``unsteady`` tag; the run stops after warm-up when its estimate exceeds
``run.max_minutes``.
"""

from __future__ import annotations

import torch

from dabench.backends import measure
from dabench.backends.base import TimedWindowCallback
from dabench.backends.torch_train import build_train_state
from dabench.config.sections import RunConfig
from dabench.core.profile import Profile, Subtask, UnitUse
from dabench.core.status import OutOfMemory
from dabench.host.conditions import allowed_cpus
from dabench.runtime.interrupts import in_worker
from dabench.runtime.progress import StepProgress

#: messages of a failed host allocation (torch's CPU allocator raises RuntimeError with these)
CPU_OOM_MESSAGES = (
    "DefaultCPUAllocator: can't allocate memory",
    "DefaultCPUAllocator: not enough memory",
    "std::bad_alloc",
    "Cannot allocate memory",
)


def is_out_of_memory(error: BaseException) -> bool:
    """True for an allocation failure on any device: torch.OutOfMemoryError (CUDA), MemoryError
    (Python), or a RuntimeError from the CPU allocator (issue: a CPU OOM is ``oom`` like CUDA's)."""
    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(error, RuntimeError) and any(m in str(error) for m in CPU_OOM_MESSAGES)


SUBTASK_STEPS = 3  #: instrumented steps whose median gives per-layer times


def _progress(rc: RunConfig, device: torch.device, tags: dict[str, str] | None):
    """The run's step progress: every step it will take, and why it may be slow (emulated precision)."""
    steps = rc.run.warmup_steps + rc.run.timed_steps + (SUBTASK_STEPS + 1 if rc.run.profile_subtasks else 0)
    reason = ""
    if (tags or {}).get("precision_native") == "false":
        dtype = rc.precision.compute_dtype
        reason = f"{dtype} is emulated on this CPU: it has no native {dtype} arithmetic"
    label = f"measure {rc.model.name} L{rc.model.n_layers} {rc.precision.name} b{rc.run.batch_size} on {device.type}"
    limit_s = rc.run.max_minutes * 60 if rc.run.max_minutes else None
    return StepProgress(label, steps, reason, estimate_after=2 if rc.run.warmup_steps >= 2 else 1, limit_s=limit_s)


def run_on_device(
    rc: RunConfig,
    device: torch.device,
    clock,
    units: dict[str, UnitUse],
    source: str,
    memory_level: str,
    peak_memory,
    tags: dict[str, str] | None = None,
    on_timed_window: TimedWindowCallback | None = None,
) -> Profile:
    """Build, warm up, time, then instrument one device (parallel runs go to dabench.distributed).
    ``peak_memory()`` returns peak bytes after the run; ``tags`` go onto the Profile."""
    losses: list[float] = []
    watch = measure.WindowWatch(torch.get_num_threads(), allowed_cpus()) if device.type == "cpu" else None
    subtasks: list[Subtask] = []
    extra: dict[str, float] = {}
    progress = _progress(rc, device, tags)
    try:

        def timed() -> tuple:
            state = build_train_state(rc, device)
            window = (progress, losses, on_timed_window, watch, rc.run.remeasure)
            steps = measure.time_steps(state, clock, rc.run.warmup_steps, rc.run.timed_steps, *window)
            layers, classes = None, {}
            if rc.run.profile_subtasks:
                layers = measure.layer_times(state, clock, state.model.layer_names(), SUBTASK_STEPS, progress)
                progress.set_phase("op profile")
                classes = measure.op_class_times(state, device.type == "cuda")
                progress.step()
            return state, steps, layers, classes

        if rc.run.profile_subtasks:
            measure.prepare_profiler(device.type == "cuda")
        # every torch step of the run in one worker thread, none in this one: a second thread that ran
        # torch's OpenMP regions makes the pools of both throttle their spinning (half the throughput on 2 CPUs)
        state, step_times, layers, class_times = in_worker(timed, "dabench-measure")
        if layers is not None:
            per_layer, optimizer_s = layers
            subtasks = [Subtask(name, time_s=seconds) for name, seconds in per_layer.items()]
            class_times["optimizer"] = optimizer_s
            extra["subtask.optimizer_s"] = optimizer_s
            step = sorted(step_times)[len(step_times) // 2]
            extra["subtask.coverage"] = (sum(per_layer.values()) + optimizer_s) / step
    except (torch.OutOfMemoryError, MemoryError, RuntimeError) as error:
        if not is_out_of_memory(error):
            raise
        message = (str(error).splitlines() or [type(error).__name__])[0] or type(error).__name__
        raise OutOfMemory(f"{device.type}: {message}"[:500]) from error
    finally:
        progress.close()
    if losses:
        extra["loss.final"] = losses[0]  # checked before recording: a non-finite loss is `diverged`
    extra.update(measure.window_metrics(step_times, rc.samples_per_step, watch))
    tags = dict(tags or {})
    if watch is not None:
        reasons = [reason for _, reason in watch.attempts]
        if reasons[-1] is not None:
            tags["unsteady"] = reasons[-1]
        if len(reasons) > 1:
            tags["remeasured"] = " | ".join(f"attempt {i + 1}: {r or 'steady'}" for i, r in enumerate(reasons))
    return Profile(
        mode="measure",
        source=source,
        step_times_s=step_times,
        samples_per_step=rc.samples_per_step,
        tokens_per_step=rc.tokens_per_step,
        chips=1,
        units=units,
        subtasks=subtasks,
        memory_bytes={memory_level: float(peak_memory())},
        class_times_s=class_times,
        extra_metrics=extra,
        tags={"subtask_kind": "layer", **tags},
    )
