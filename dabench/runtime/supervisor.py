"""One supervisor for every child process dabench starts (vendor runners, distributed ranks).

Starts each child in its own session (process group) with its output in a log file, waits with a
deadline, kills the whole group whatever ends the wait, and classifies the exit as ok, oom (an
out-of-memory marker, or SIGKILL while the cgroup's OOM-kill counter rose), interrupted (SIGINT or
SIGTERM it did not send), timeout or crashed. Children still running are killed by a second
Ctrl-C / SIGTERM before the process exits (:func:`dabench.runtime.interrupts.at_exit_now`).
Standard library only (plus the status names and the interrupt hooks).

Derivation: docs/reliability.md, section 11.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from dabench.core.status import Status
from dabench.runtime import interrupts

#: exit classes, in the one status vocabulary (dabench/core/status.py)
OK, OOM, INTERRUPTED, TIMEOUT, CRASHED = (
    Status.OK.value,
    Status.OOM.value,
    Status.INTERRUPTED.value,
    Status.TIMEOUT.value,
    Status.CRASHED.value,
)
TAIL_CHARS = 4000
POLL_S = 0.05
#: output lines that mean the child ran out of memory (Python, torch CPU/CUDA, the C allocator)
OOM_MARKERS = re.compile(
    r"MemoryError|out of memory|OutOfMemoryError|Cannot allocate memory|"
    r"std::bad_alloc|DefaultCPUAllocator: can't allocate",
    re.IGNORECASE,
)
#: cgroup files whose ``oom_kill N`` line counts the kernel's OOM kills (v2, then v1)
OOM_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")


def tail(path: Path | str, chars: int = TAIL_CHARS) -> str:
    """The last ``chars`` characters of a text file ('' when absent)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - chars))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def oom_kill_count(paths: Sequence[str] = OOM_COUNTERS) -> int | None:
    """The kernel's OOM-kill count for this process's memory cgroup (None when not readable)."""
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        found = re.search(r"^oom_kill (\d+)$", text, re.MULTILINE)
        if found:
            return int(found.group(1))
    return None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass
class Exit:
    """How a child ended. ``returncode`` is negative for death by a signal (None if unknown)."""

    status: str
    returncode: int | None
    description: str
    tail: str = ""
    killed_by_supervisor: bool = False

    @property
    def ok(self) -> bool:
        return self.status == OK


def classify(
    returncode: int | None,
    output_tail: str = "",
    *,
    timed_out: bool = False,
    killed_by_supervisor: bool = False,
    oom_killed: bool = False,
) -> tuple[str, str]:
    """(status, description) for a child's end; see the module table. ``oom_killed``: the
    cgroup's OOM-kill counter went up while the child ran."""
    if timed_out:
        return TIMEOUT, "still running at its time limit; its process group was killed"
    if returncode == 0:
        return OK, "exited with status 0"
    if returncode is None:
        return CRASHED, "ended without an exit status"
    if returncode < 0:
        how = f"killed by signal {signal_name(-returncode)}"
    elif returncode > 128 and returncode - 128 in (signal.SIGKILL, signal.SIGINT, signal.SIGTERM):
        how = f"exited with status {returncode} ({signal_name(returncode - 128)})"
    else:
        how = f"exited with status {returncode}"
    signo = -returncode if returncode < 0 else (returncode - 128 if returncode > 128 else 0)
    if OOM_MARKERS.search(output_tail or ""):
        return OOM, how + " after running out of memory (output names it)"
    if signo == signal.SIGKILL and oom_killed and not killed_by_supervisor:
        return OOM, how + " by the kernel's out-of-memory killer"
    if signo in (signal.SIGINT, signal.SIGTERM) and not killed_by_supervisor:
        return INTERRUPTED, how
    return CRASHED, how


_LIVE: dict[int, "Child"] = {}  #: started children not yet killed or reaped, by pid


def kill_live() -> None:
    """SIGKILL the process group of every child still held (a second signal's last act)."""
    for pid in list(_LIVE):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


interrupts.at_exit_now(kill_live)


@dataclass
class Child:
    """A started child: its Popen, log file and the OOM-kill count when it started."""

    proc: subprocess.Popen
    log_path: Path
    oom_kills_at_start: int | None = None
    killed: bool = field(default=False)

    @property
    def pid(self) -> int:
        return self.proc.pid


def start(
    command: Sequence[str], log_path: Path | str, *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None
) -> Child:
    """Start ``command`` in a new session, stdout and stderr to ``log_path``, stdin closed.
    OSError when it cannot start."""
    log_path = Path(log_path)
    counter = oom_kill_count()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            list(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    child = Child(proc, log_path, counter)
    _LIVE[proc.pid] = child
    return child


def kill_group(child: Child) -> bool:
    """SIGKILL the child's process group (grandchildren too) and reap the child. True when the
    child itself was still running (the supervisor ended it)."""
    running = child.proc.poll() is None
    try:
        os.killpg(child.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if running:
            child.proc.kill()
    try:
        child.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass
    child.killed = child.killed or running
    _LIVE.pop(child.proc.pid, None)
    return running


def outcome(child: Child, *, timed_out: bool = False, tail_chars: int = TAIL_CHARS) -> Exit:
    """Classify a finished (or killed) child."""
    _LIVE.pop(child.proc.pid, None)
    output = tail(child.log_path, tail_chars)
    after = oom_kill_count()
    oom_killed = after is not None and child.oom_kills_at_start is not None and after > child.oom_kills_at_start
    status, description = classify(
        child.proc.returncode, output, timed_out=timed_out, killed_by_supervisor=child.killed, oom_killed=oom_killed
    )
    return Exit(status, child.proc.returncode, description, output, child.killed)


def run(
    command: Sequence[str],
    log_path: Path | str,
    timeout_s: float,
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    tail_chars: int = TAIL_CHARS,
) -> Exit:
    """Start, wait at most ``timeout_s``, kill the group (always: no grandchild outlives the
    call), classify. KeyboardInterrupt and other exceptions kill the group and propagate."""
    child = start(command, log_path, cwd=cwd, env=env)
    timed_out = False
    try:
        child.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:
        kill_group(child)
        raise
    _kill_leftovers(child)
    if timed_out:
        kill_group(child)
    return outcome(child, timed_out=timed_out, tail_chars=tail_chars)


def _kill_leftovers(child: Child) -> None:
    """SIGKILL what is left of an exited child's group (grandchildren it left behind)."""
    if child.proc.poll() is None:
        return
    try:
        os.killpg(child.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def wait_all(children: Sequence[Child], timeout_s: float, grace_s: float = 2.0) -> str:
    """Wait until all children exit 0 ("ok"), one fails ("failed", after ``grace_s`` for the
    others to finish on their own) or ``timeout_s`` passes ("timeout"). Kills nothing."""
    deadline = time.monotonic() + timeout_s
    while True:
        codes = [child.proc.poll() for child in children]
        if all(code == 0 for code in codes):
            return "ok"
        if any(code not in (None, 0) for code in codes):
            grace_end = min(deadline, time.monotonic() + grace_s)
            while time.monotonic() < grace_end and any(child.proc.poll() is None for child in children):
                time.sleep(POLL_S)
            return "failed"
        if time.monotonic() > deadline:
            return "timeout"
        time.sleep(POLL_S)


def kill_all(children: Sequence[Child]) -> set[int]:
    """Kill every child's group and reap them all; the indexes of those that were still running."""
    return {i for i, child in enumerate(children) if kill_group(child)}
