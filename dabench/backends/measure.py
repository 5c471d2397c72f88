"""Timing on a torch device, shared by the cpu and cuda backends: step times between clock marks
(``perf_counter`` on CPU, CUDA events on a GPU), per-layer (subtask) and per-op-class times after
the timed window, and the window's conditions on CPU (:class:`WindowWatch`, ``measure.*``
metrics). Methods: docs/metrics.md, "Throughput and step time"; docs/reliability.md, 3b.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections import defaultdict

import torch

from dabench.backends.base import TimedWindowCallback
from dabench.backends.torch_train import TrainState, op_class_of
from dabench.host import conditions
from dabench.runtime import quiet


class HostClock:
    """Wall clock for synchronous (CPU) work."""

    def mark(self) -> float:
        return time.perf_counter()

    def elapsed(self, start: float, end: float) -> float:
        return end - start

    def synchronize(self) -> None:
        pass


class CudaClock:
    """CUDA events on the current stream; ``elapsed`` is valid after ``synchronize``."""

    def __init__(self, device: torch.device):
        self.device = device

    def mark(self):
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def elapsed(self, start, end) -> float:
        return start.elapsed_time(end) / 1000.0

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)


class WindowWatch:
    """The conditions of each timed window (:mod:`dabench.host.conditions`): ``start()`` and
    ``stop(step_times)`` around it; ``stop`` returns why the window is unsteady, or None.
    ``attempts`` holds each window's (conditions, reason)."""

    def __init__(self, threads: int, cpus: int):
        self.threads, self.cpus = threads, cpus
        self.attempts: list[tuple[conditions.Conditions, str | None]] = []
        self._before: conditions.Sample | None = None

    def start(self) -> None:
        self._before = conditions.sample()

    def stop(self, step_times: list[float]) -> str | None:
        after = conditions.sample()
        window = conditions.window(self._before, after, self.threads, self.cpus, step_times)
        reason = conditions.judge(window)
        self.attempts.append((window, reason))
        return reason


def window_metrics(step_times: list[float], samples_per_step: float, watch: WindowWatch | None) -> dict[str, float]:
    """The timed steps' own band (``throughput.samples_per_s.lo/.hi``, ``step_time.median_s.lo/.hi``:
    the slowest and fastest step), ``measure.step_spread``, and with a ``watch`` the last window's
    conditions and ``measure.attempts``. Pure."""
    fastest, slowest = min(step_times), max(step_times)
    out = {
        "step_time.median_s.lo": fastest,
        "step_time.median_s.hi": slowest,
        "throughput.samples_per_s.lo": samples_per_step / slowest if slowest > 0 else 0.0,
        "throughput.samples_per_s.hi": samples_per_step / fastest if fastest > 0 else 0.0,
        "measure.step_spread": conditions.spread(step_times),
    }
    if watch is not None and watch.attempts:
        out.update(watch.attempts[-1][0].metrics())
        out["measure.attempts"] = float(len(watch.attempts))
    return out


def time_steps(
    state: TrainState,
    clock,
    warmup: int,
    timed: int,
    progress,
    losses: list[float] | None = None,
    on_timed_window: TimedWindowCallback | None = None,
    watch: WindowWatch | None = None,
    remeasure: int = 0,
) -> list[float]:
    """Seconds per optimizer step over the timed window (the last of at most ``remeasure`` + 1,
    timed again while ``watch`` finds it unsteady). ``losses`` receives the last step's loss;
    ``progress`` (a :class:`~dabench.runtime.progress.StepProgress`) and ``on_timed_window`` are
    called outside the clock marks."""
    progress.set_phase("warm-up")
    for _ in range(warmup):
        state.step()
        clock.synchronize()  # warm-up only: the estimate needs finished steps
        progress.step()
    clock.synchronize()
    for attempt in range(1 + max(0, remeasure)):
        if on_timed_window is not None:
            on_timed_window("before")
        progress.set_phase("timed" if attempt == 0 else f"timed again ({attempt + 1})")
        if watch is not None:
            watch.start()
        marks = []
        loss = None
        for _ in range(timed):
            start = clock.mark()
            loss = state.step()
            marks.append((start, clock.mark()))
            progress.step()
        clock.synchronize()
        times = [clock.elapsed(a, b) for a, b in marks]
        unsteady = watch.stop(times) if watch is not None else None
        if on_timed_window is not None:
            on_timed_window("after")
        if unsteady is None or attempt == remeasure:
            break
        progress.add_steps(timed)
    if losses is not None and loss is not None:
        losses.append(float(loss.detach().float().item()))
    return times


class LayerTimer:
    """Collects clock marks at layer boundaries during an instrumented step (see module doc)."""

    def __init__(self, clock):
        self.clock = clock
        self.fwd: list[tuple[str, object, object]] = []
        self._starts: dict[str, object] = {}
        self.boundaries: list[str] = []  # layer whose output each hooked tensor is
        self.grad_marks: dict[str, object] = {}

    def __call__(self, event: str, layer: str, tensor: torch.Tensor) -> None:
        if event == "fwd_start":
            self._starts[layer] = self.clock.mark()
            return
        self.fwd.append((layer, self._starts.pop(layer), self.clock.mark()))
        if layer != "head" and tensor.requires_grad:
            self.boundaries.append(layer)
            tensor.register_hook(functools.partial(self._on_grad, layer))

    def _on_grad(self, layer: str, grad: torch.Tensor) -> None:
        """Backward reached ``layer``'s output: the mark that ends the layer after it."""
        self.grad_marks[layer] = self.clock.mark()


def layer_times(
    state: TrainState, clock, layer_names: list[str], steps: int, progress
) -> tuple[dict[str, float], float]:
    """Median per-layer (forward + backward) seconds per step, and median optimizer seconds."""
    progress.set_phase("per-layer timing")
    per_layer: dict[str, list[float]] = defaultdict(list)
    optimizer_times: list[float] = []
    for _ in range(steps):
        totals: dict[str, float] = defaultdict(float)
        pending = []
        for _ in range(state.grad_accum):
            timer = LayerTimer(clock)
            with state.autocast():
                loss = state.model(state.ids, state.targets, timer)
            bwd_start = clock.mark()
            (loss / state.grad_accum).backward()
            bwd_end = clock.mark()
            pending.append((timer, bwd_start, bwd_end))
        opt_start = clock.mark()
        state.optimizer_step()
        opt_end = clock.mark()
        clock.synchronize()
        for timer, bwd_start, bwd_end in pending:
            for layer, start, end in timer.fwd:
                totals[layer] += clock.elapsed(start, end)
            # backward runs head -> blocks -> embedding; each boundary's grad mark ends the layer
            # after it and starts the layer that produced it
            order = ["head", *reversed(timer.boundaries)]
            ends = [timer.grad_marks.get(producer, bwd_end) for producer in order[1:]] + [bwd_end]
            for layer, start, end in zip(order, [bwd_start, *ends], ends, strict=False):
                totals[layer] += clock.elapsed(start, end)
        for name in layer_names:
            per_layer[name].append(totals.get(name, 0.0))
        optimizer_times.append(clock.elapsed(opt_start, opt_end))
        progress.step()
    return {name: statistics.median(v) for name, v in per_layer.items()}, statistics.median(optimizer_times)


def prepare_profiler(use_cuda: bool) -> None:
    """Start and stop torch's profiler once on this thread, the one that imported torch, before
    :func:`op_class_times` runs on another: kineto initializes its client on first use and refuses
    (``ERROR: External init callback must run in same thread as registerClient``) off that thread.
    Its own log lines stay off unless verbose (:func:`dabench.runtime.quiet.env_defaults`)."""
    quiet.env_defaults()
    with torch.profiler.profile(activities=_activities(use_cuda)):
        pass


def _activities(use_cuda: bool) -> list:
    return [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if use_cuda else [])


def op_class_times(state: TrainState, use_cuda: bool) -> dict[str, float]:
    """Seconds per op class for one step's forward + backward, from torch.profiler self times."""
    with torch.profiler.profile(activities=_activities(use_cuda)) as prof:
        state.forward_backward()
        if use_cuda:
            torch.cuda.synchronize()
    totals: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        micros = event.self_device_time_total if use_cuda else event.self_cpu_time_total
        if micros:
            totals[op_class_of(event.key)] += micros / 1e6
    state.optimizer.zero_grad(set_to_none=True)
    return dict(totals)
