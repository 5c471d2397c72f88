"""Item 11: one supervisor starts, times out, kills and classifies every child process."""

from __future__ import annotations

import signal
import sys

import pytest

from dabench.runtime import supervisor
from dabench.runtime.supervisor import classify


def _run(tmp_path, code: str, timeout_s: float = 120.0) -> supervisor.Exit:
    return supervisor.run([sys.executable, "-c", code], tmp_path / "child.log", timeout_s)


@pytest.mark.parametrize(
    "returncode, tail, kwargs, status",
    [
        (0, "", {}, "ok"),
        (1, "Traceback...\nMemoryError", {}, "oom"),
        (1, "RuntimeError: [enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't allocate memory", {}, "oom"),
        (-9, "", {"oom_killed": True}, "oom"),
        (137, "", {"oom_killed": True}, "oom"),
        (-9, "", {}, "crashed"),  # SIGKILL without memory evidence
        (-9, "", {"oom_killed": True, "killed_by_supervisor": True}, "crashed"),
        (-2, "", {}, "interrupted"),
        (-15, "", {}, "interrupted"),
        (130, "", {}, "interrupted"),
        (-15, "", {"killed_by_supervisor": True}, "crashed"),
        (-11, "", {}, "crashed"),
        (3, "", {}, "crashed"),
        (None, "", {"timed_out": True}, "timeout"),
    ],
)
def test_classify(returncode, tail, kwargs, status):
    assert classify(returncode, tail, **kwargs)[0] == status


def test_signal_is_named():
    assert classify(-signal.SIGSEGV)[1] == "killed by signal SIGSEGV"
    assert "status 3" in classify(3)[1]


def test_real_children(tmp_path):
    ok = _run(tmp_path, "print('hello')")
    assert ok.ok and ok.tail.strip() == "hello"
    oom = _run(tmp_path, "raise MemoryError()")
    assert oom.status == "oom" and "MemoryError" in oom.tail
    term = _run(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert term.status == "interrupted" and term.returncode == -signal.SIGTERM
    segv = _run(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert segv.status == "crashed" and "SIGSEGV" in segv.description


@pytest.mark.slow
def test_a_child_that_never_ends_is_timed_out_and_its_group_killed(tmp_path):
    # the child blocks forever on a pipe nobody writes; its grandchild waits for a signal forever
    code = (
        "import os, subprocess, sys; r, w = os.pipe(); "
        "g = subprocess.Popen([sys.executable, '-c', 'import signal; signal.pause()']); "
        "print(g.pid, flush=True); os.read(r, 1)"
    )
    ended = _run(tmp_path, code, timeout_s=8)
    assert ended.status == "timeout" and ended.killed_by_supervisor
    import os
    import select

    for pid in ended.tail.split():  # the grandchild, when it had started before the deadline
        try:
            fd = os.pidfd_open(int(pid))
        except ProcessLookupError:
            continue  # gone already
        try:  # a pidfd becomes readable when the process ends: wait for that event, not a guess
            ready, _, _ = select.select([fd], [], [], 60)
        finally:
            os.close(fd)
        assert ready, f"grandchild {pid} survived the timeout"


def test_a_second_signal_kills_the_children_still_held(tmp_path):
    """``kill_live`` (run by a second Ctrl-C / SIGTERM before the process exits) kills the group
    of every child started and not yet reaped; a reaped child is no longer held."""
    from dabench.runtime import interrupts

    assert supervisor.kill_live in interrupts._exit_now_hooks
    child = supervisor.start([sys.executable, "-c", "import time; time.sleep(300)"], tmp_path / "log.txt")
    assert child.proc.pid in supervisor._LIVE
    supervisor.kill_live()
    assert child.proc.wait(timeout=30) == -signal.SIGKILL
    supervisor.outcome(child)
    assert child.proc.pid not in supervisor._LIVE
