"""Ctrl-C and SIGTERM bite inside a torch call that takes minutes (dabench/runtime/interrupts.py:
``in_worker`` and the guard), and a measured run inside its steps ends within 10 s, recorded
``interrupted``; a second signal exits at once.

The long call is ``torch.linalg.eigvals`` of a 3000 x 3000 float64 matrix (O(n^3) work on 72 MB:
minutes on a 2-core CPU; the test never waits for it). Readiness is read from the child (a line it
prints, a run it opened in the store and the threads it started), never guessed.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests import forkserver
from tests.conftest import cli_env, default_sigint

pytestmark = pytest.mark.slow
LIMIT_S = 10.0  #: a signal must end the process within this

LONG_CALL = textwrap.dedent(
    """
    import torch
    from dabench.runtime import interrupts

    a = torch.randn(3000, 3000, dtype=torch.float64)

    def long_call():
        print("inside", flush=True)
        torch.linalg.eigvals(a)
        print("returned", flush=True)

    with interrupts.guard():
        interrupts.on_interrupt(lambda: "closer ran")
        interrupts.in_worker(long_call)
    """
)


def wait_for_line(proc: subprocess.Popen, text: str, deadline_s: float = 300) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if text in line:
            return
        assert line or proc.poll() is None, "child ended before it was ready"
    raise AssertionError(f"child never printed {text!r}")


def ended_within(proc: subprocess.Popen, limit_s: float) -> tuple[int, float, str]:
    start = time.monotonic()
    try:
        proc.wait(timeout=limit_s + 20)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - start
    return proc.returncode, took, proc.stderr.read()


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_a_call_that_takes_minutes(sig, code):
    proc = subprocess.Popen(
        [sys.executable, "-c", LONG_CALL],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
        cwd=Path(__file__).resolve().parents[2],
    )
    wait_for_line(proc, "inside")
    time.sleep(1.0)  # well inside eigvals
    os.kill(proc.pid, sig)
    rc, took, err = ended_within(proc, LIMIT_S)
    assert rc == code and took < LIMIT_S, (rc, took, err[-2000:])
    assert "closer ran" in err and "Traceback" not in err


def running_run(store: Path) -> bool:
    try:
        with sqlite3.connect(store) as db:
            return db.execute("select count(*) from runs where status='RUNNING'").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def start_long_measured_run(tmp_path: Path) -> subprocess.Popen | forkserver.Forked:
    """gpt2_small in bf16: each step takes about a minute on a 2-core CPU without native bf16.
    Returns once its MLflow run is open and its measuring thread has run for a few seconds."""
    env = {**cli_env(tmp_path), "DABENCH_PROGRESS": "off"}
    args = ["model=gpt2_small", "run.batch_size=1", "precision=bf16", "run.max_minutes=0"]
    proc = forkserver.start([*args, "tracking.system_metrics_interval_s=0"], tmp_path, env, preexec_fn=default_sigint)
    end = time.monotonic() + 300
    while not (running_run(tmp_path / "mlflow.db") and threads(proc.pid) >= 3):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < end, "the measured run never started"
        time.sleep(0.2)
    time.sleep(5.0)  # building the model and into its first steps
    return proc


def run_states(store: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(store) as db:
        return db.execute(
            "select r.status, t.value from runs r join tags t on t.run_uuid = r.run_uuid and t.key = 'dabench.status'"
        ).fetchall()


def test_ctrl_c_ends_a_measured_run_inside_its_steps_and_records_it_interrupted(tmp_path):
    proc = start_long_measured_run(tmp_path)
    os.kill(proc.pid, signal.SIGINT)
    rc, took, err = ended_within(proc, LIMIT_S)
    assert rc == 130 and took < LIMIT_S, (rc, took, err[-3000:])
    assert run_states(tmp_path / "mlflow.db") == [("KILLED", "interrupted")]
    assert "recorded interrupted (KILLED)" in err.strip().splitlines()[-1]


def test_a_second_signal_exits_at_once(tmp_path):
    proc = start_long_measured_run(tmp_path)
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.01)
    os.kill(proc.pid, signal.SIGTERM)
    rc, took, err = ended_within(proc, LIMIT_S)
    assert took < LIMIT_S, (rc, took, err[-3000:])
    if "second SIGTERM: exiting now" in err:  # the second came while the first was closing the run
        assert rc == 143
    else:  # the first had already closed everything and exited
        assert rc == 130, err[-3000:]
