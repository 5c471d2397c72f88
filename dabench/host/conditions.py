"""The conditions a timed window ran under (:func:`sample` before and after it, :func:`window`),
and whether they make its numbers unsteady (:func:`judge`: the cause and what to do, or None).
``DABENCH_STEADY_CHECK=off`` keeps the metrics but judges nothing. Thresholds and their
rationale: docs/reliability.md, "Disturbed measurements"."""

from __future__ import annotations

import logging
import math
import os
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from dabench.core.readers import text_or_empty

CHECK_ENV = "DABENCH_STEADY_CHECK"  #: ``off`` records the conditions but never flags a run
MIN_CPU_SHARE = 0.85  #: CPU time the run's threads must get, of wall x threads, when others want CPUs
MAX_WAIT = 0.25  #: share of the window in which some runnable task waited for a CPU (PSI)
MAX_CONTENTION = 0.20  #: without PSI: share of the run's threads' CPUs other processes took
MAX_STEAL = 0.10  #: share of the allowed CPUs' time the hypervisor may give to other guests
MAX_STEP_SPREAD = 0.50  #: (max - min) / median of the timed steps
MIN_WINDOW_S = 0.02  #: shorter windows are judged on their step spread only
MIN_TICK_WINDOW_S = 0.1  #: without PSI, shorter windows are not judged on CPU time (10 ms /proc/stat ticks)
TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def parse_cpu_max(text: str) -> float | None:
    """CPUs allowed by a cgroup v2 ``cpu.max`` line (``"200000 100000"`` -> 2.0; ``max`` -> None)."""
    parts = text.split()
    if len(parts) < 2 or parts[0] == "max":
        return None
    return int(parts[0]) / int(parts[1])


def _quota(text: str) -> float | None:
    """CPUs of one ``cpu.max`` text (v1: ``"<quota_us> <period_us>"``): None when unlimited or unreadable."""
    try:
        quota = parse_cpu_max(text)
    except (ValueError, ZeroDivisionError):
        return None
    return quota if quota is not None and quota > 0 else None


def cgroup_quota(root: Path = Path("/sys/fs/cgroup"), self_cgroup: Path = Path("/proc/self/cgroup")) -> float | None:
    """CPUs this process's cgroup (or a parent) may use, v2 or v1, or None."""
    lines = text_or_empty(self_cgroup).splitlines()
    relative = next((line.split(":", 2)[2] for line in lines if line.startswith("0::")), "/")
    own = root / relative.lstrip("/")
    v2 = [text_or_empty(f / "cpu.max") for f in (own, *own.parents) if f == root or root in f.parents]
    v1 = [
        f"{text_or_empty(v / 'cpu.cfs_quota_us')} {text_or_empty(v / 'cpu.cfs_period_us')}"
        for v in (root / "cpu,cpuacct", root / "cpu")
    ]
    return min((q for q in map(_quota, v2 + v1) if q is not None), default=None)


def affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def allowed_cpus() -> int:
    """CPUs this process may use: its affinity, capped by the cgroup quota (at least 1)."""
    count = len(affinity())
    quota = cgroup_quota()
    if quota is not None:
        count = min(count, max(1, math.floor(quota)))
    return max(1, count)


@dataclass(frozen=True)
class Sample:
    """One reading: wall and process CPU seconds, and the allowed CPUs' busy and steal seconds."""

    wall_s: float
    cpu_s: float  #: this process's CPU time, all threads
    busy_s: float  #: user + nice + system + irq + softirq of the allowed CPUs, every process
    steal_s: float  #: time the hypervisor ran other guests on the allowed CPUs
    running: int  #: runnable tasks on the machine (procs_running), this run's own threads included
    readable: bool = True  #: False where /proc/stat could not be read (then busy and steal are 0)
    wait_s: float | None = None  #: time some runnable task waited for a CPU (/proc/pressure/cpu), if exposed


def parse_proc_stat(text: str, cpus: set[int]) -> tuple[float, float, int, bool]:
    """(busy ticks, steal ticks, procs_running, found) of ``cpus`` from /proc/stat's text."""
    lines = [line.split() for line in text.splitlines()]
    # per allowed CPU: user nice system idle iowait irq softirq steal (missing columns: 0)
    ticks = [
        [float(x) for x in row[1:9]] + [0.0] * (9 - len(row))
        for row in lines
        if row and row[0][:3] == "cpu" and row[0][3:].isdigit() and int(row[0][3:]) in cpus
    ]
    running = next((int(row[1]) for row in lines if row and row[0] == "procs_running"), 0)
    busy = sum(t[0] + t[1] + t[2] + t[5] + t[6] for t in ticks)
    return busy, sum(t[7] for t in ticks), running, bool(ticks)


def parse_pressure(text: str) -> float | None:
    """Seconds of the ``some`` line's ``total=`` (microseconds) of a PSI file, or None."""
    found = re.search(r"^some.*?total=(\d+)", text, re.MULTILINE)  # the first "some" line
    return int(found.group(1)) / 1e6 if found else None


def sample(cpus: set[int] | None = None) -> Sample:
    busy, steal, running, found = parse_proc_stat(text_or_empty("/proc/stat"), affinity() if cpus is None else cpus)
    wait = parse_pressure(text_or_empty("/proc/pressure/cpu"))
    return Sample(time.perf_counter(), time.process_time(), busy * TICK_S, steal * TICK_S, running, found, wait)


@dataclass(frozen=True)
class Conditions:
    """What a timed window got; :meth:`metrics` gives the ``measure.*`` metrics."""

    wall_s: float
    threads: int  #: the run's threads (torch's intra-op count)
    cpus: int  #: the CPUs it may use (:func:`allowed_cpus`)
    cpu_share: float  #: its CPU time / (wall x min(threads, cpus))
    others_cpus: float  #: CPUs' worth of time other processes used on the allowed CPUs
    contention: float  #: share of the run's threads' CPUs other processes took (beyond the idle ones)
    steal: float  #: steal time / (wall x cpus)
    run_queue: float  #: mean runnable tasks at the window's edges, this run's threads included
    step_spread: float  #: (max - min) / median of the step times
    wait: float | None = None  #: share of the window some runnable task waited for a CPU (None: no PSI)
    readable: bool = True

    def metrics(self) -> dict[str, float]:
        return {
            "measure.cpu_share": self.cpu_share,
            "measure.others_cpus": self.others_cpus,
            "measure.contention": self.contention,
            "measure.steal": self.steal,
            "measure.run_queue": self.run_queue,
            "measure.step_spread": self.step_spread,
            **({} if self.wait is None else {"measure.cpu_wait": self.wait}),
            "measure.threads": float(self.threads),
            "measure.cpus_allowed": float(self.cpus),
        }


def spread(step_times: Sequence[float]) -> float:
    """(max - min) / median."""
    if not step_times:
        return 0.0
    median = statistics.median(step_times)
    return (max(step_times) - min(step_times)) / median if median > 0 else 0.0


def window(before: Sample, after: Sample, threads: int, cpus: int, step_times: Sequence[float]) -> Conditions:
    wall = max(after.wall_s - before.wall_s, 1e-9)
    used = max(1, min(threads, cpus))
    own = max(0.0, after.cpu_s - before.cpu_s)
    others = max(0.0, (after.busy_s - before.busy_s) - own) / wall
    contention = max(0.0, others - (cpus - used)) / used
    return Conditions(
        wall_s=wall,
        threads=threads,
        cpus=cpus,
        cpu_share=own / (wall * used),
        others_cpus=others,
        contention=contention,
        steal=max(0.0, after.steal_s - before.steal_s) / (wall * cpus),
        run_queue=(before.running + after.running) / 2,
        step_spread=spread(step_times),
        wait=None if before.wait_s is None or after.wait_s is None else max(0.0, after.wait_s - before.wait_s) / wall,
        readable=before.readable and after.readable,
    )


def judge(c: Conditions) -> str | None:
    """Why the window is unsteady (cause, then what to do), or None when its numbers stand."""
    if os.environ.get(CHECK_ENV, "on").strip().lower() in ("off", "0", "false", "no"):
        return None
    advice = "run it again when the machine is quiet, or give it CPUs of its own (taskset, fewer run.threads)"
    # other tasks competed for the run's CPUs: by PSI, else by their CPU time (long windows)
    by_time = c.readable and c.wall_s >= MIN_TICK_WINDOW_S and c.contention > MAX_CONTENTION
    others_wanted = c.wait > MAX_WAIT if c.wait is not None else by_time
    if c.wall_s >= MIN_WINDOW_S and c.cpu_share < MIN_CPU_SHARE and others_wanted:
        used = min(c.threads, c.cpus)
        waited = "" if c.wait is None else f", tasks waited for a CPU {c.wait:.0%} of the time"
        return (
            f"got {c.cpu_share:.0%} of {used} CPU{'s' if used > 1 else ''} during the timed steps "
            f"(< {MIN_CPU_SHARE:.0%}): other processes used the rest ({c.others_cpus:.1f} of the "
            f"{c.cpus} CPUs it may use{waited}); {advice}"
        )
    if c.readable and c.wall_s >= MIN_TICK_WINDOW_S and c.steal > MAX_STEAL:
        return (
            f"the hypervisor gave {c.steal:.0%} of this VM's CPU time to other guests during the timed "
            f"steps (steal > {MAX_STEAL:.0%}); run it again later or on a dedicated machine"
        )
    if c.step_spread > MAX_STEP_SPREAD:
        return (
            f"the timed steps spread {c.step_spread:.0%} (slowest - fastest) / median > {MAX_STEP_SPREAD:.0%}: "
            f"something disturbed some of them; {advice}"
        )
    return None


_WARNED_THREADS: set[tuple[int, int]] = set()


def run_threads(requested: int | None) -> int:
    """A measured CPU run's threads: ``requested`` (more than the CPUs: said once), else the CPUs."""
    cpus = allowed_cpus()
    if requested is None:
        return cpus
    if requested > cpus and (requested, cpus) not in _WARNED_THREADS:
        _WARNED_THREADS.add((requested, cpus))
        logging.getLogger("dabench").warning(
            "run.threads=%d is more than the %d CPU(s) this process may use (affinity, cgroup quota): "
            "its threads will wait for each other; run.threads=null uses %d",
            requested,
            cpus,
            cpus,
        )
    return requested
