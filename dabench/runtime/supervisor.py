"""One supervisor for every child process dabench starts (vendor runners, distributed ranks): each
in its own process group, output to a log file, waited for with a deadline, the whole group killed
whatever ends the wait, and the exit classified (ok, oom, interrupted, timeout, crashed).
docs/reliability.md, section 11."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from dabench.core.readers import text_or_empty
from dabench.core.status import Status
from dabench.runtime import interrupts

OK, OOM, INTERRUPTED = Status.OK.value, Status.OOM.value, Status.INTERRUPTED.value
TIMEOUT, CRASHED = Status.TIMEOUT.value, Status.CRASHED.value
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
    """The last ``chars`` characters of a text file ('' when unreadable)."""
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
        found = re.search(r"^oom_kill (\d+)$", text_or_empty(path), re.MULTILINE)
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
    """(status, description) of a child's end; ``oom_killed``: the cgroup counted an OOM kill meanwhile."""
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


def _killpg(pid: int) -> bool:
    """SIGKILL process group ``pid``; whether there was one to signal."""
    try:
        os.killpg(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_live() -> None:
    """SIGKILL the process group of every child still held (a second signal's last act)."""
    for pid in list(_LIVE):
        _killpg(pid)


interrupts.at_exit_now(kill_live)


@dataclass
class Child:
    """A started child: its Popen, log file and the OOM-kill count when it started."""

    proc: subprocess.Popen
    log_path: Path
    oom_kills_at_start: int | None = None
    killed: bool = field(default=False)


def start(
    command: Sequence[str], log_path: Path | str, *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None
) -> Child:
    """Start ``command`` in a new session, its output to ``log_path`` (OSError when it cannot)."""
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
    """SIGKILL the child's process group and reap the child; whether it was still running."""
    running = child.proc.poll() is None
    if not _killpg(child.proc.pid) and running:
        child.proc.kill()
    try:
        child.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass
    child.killed = child.killed or running
    _LIVE.pop(child.proc.pid, None)
    return running


def outcome(child: Child, *, timed_out: bool = False) -> Exit:
    """Classify a finished (or killed) child."""
    _LIVE.pop(child.proc.pid, None)
    output = tail(child.log_path)
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
) -> Exit:
    """Start, wait at most ``timeout_s``, kill the group whatever happens (a child past its time,
    or the grandchildren an exited child left behind), classify."""
    child = start(command, log_path, cwd=cwd, env=env)
    timed_out = False
    try:
        child.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        kill_group(child)
    return outcome(child, timed_out=timed_out)


def wait_all(children: Sequence[Child], timeout_s: float, grace_s: float = 2.0) -> str:
    """ "ok" once all exit 0, "failed" ``grace_s`` after one fails, "timeout"; kills nothing."""
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
