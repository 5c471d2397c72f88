"""Measured CPU runs that know their conditions, against real ``python -m dabench`` processes.

The disturbance is made, not hoped for: the run and a busy loop are pinned to the same CPU, so
the run gets at most half of it however loaded the machine already is (the check's threshold is
85%, host/conditions.py). The steady check is turned on here (the suite turns it off,
tests/conftest.py).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.conftest import cli_env

pytestmark = pytest.mark.slow
SMALL = ["run.warmup_steps=1", "run.timed_steps=4", "run.profile_subtasks=false"]
SMALL += ["tracking.system_metrics_interval_s=0"]


def store_runs(folder):
    """(status tag, MLflow state, reason, metrics, tags) of every run with a status in the store."""
    with sqlite3.connect(folder / "mlflow.db") as db:
        runs = []
        for uuid, state in db.execute("select run_uuid, status from runs"):
            tags = dict(db.execute("select key, value from tags where run_uuid=?", (uuid,)))
            metrics = dict(db.execute("select key, value from latest_metrics where run_uuid=?", (uuid,)))
            if "dabench.status" in tags:
                runs.append((tags["dabench.status"], state, tags.get("dabench.reason", ""), metrics, tags))
        return runs


def beside_busy_loops(tmp_path, args, loops=1):
    """``python -m dabench <args>`` pinned to one CPU with ``loops`` busy loops pinned beside it."""
    cpu = min(os.sched_getaffinity(0))
    pin = lambda: os.sched_setaffinity(0, {cpu})  # noqa: E731
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin) for _ in range(loops)]
    try:
        time.sleep(0.3)
        env = {**cli_env(tmp_path), "DABENCH_STEADY_CHECK": "on", "DABENCH_PROGRESS": "off"}
        return subprocess.run(
            [sys.executable, "-m", "dabench", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            preexec_fn=pin,
        )
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


def test_a_run_sharing_its_cpu_with_busy_loops_ends_unsteady_after_its_attempts(tmp_path):
    done = beside_busy_loops(tmp_path, [*SMALL, "run.remeasure=1"])
    assert done.returncode == 1, done.stderr[-3000:]
    ((status, state, reason, metrics, tags),) = store_runs(tmp_path)
    assert (status, state) == ("unsteady", "FAILED")
    assert reason.startswith("unsteady: got ") and "of 1 CPU during the timed steps" in reason, reason
    assert "other processes used the rest" in reason and "quiet" in reason
    assert metrics["measure.attempts"] == 2 and metrics["measure.cpu_share"] < 0.85
    assert metrics["measure.threads"] == 1 and metrics["measure.cpus_allowed"] == 1  # threads fit the affinity
    assert "attempt 1: got" in tags["dabench.core.profile.remeasured"]
    # the numbers are kept, with their own band
    assert metrics["throughput.samples_per_s.lo"] <= metrics["throughput.samples_per_s"]
    assert metrics["throughput.samples_per_s"] <= metrics["throughput.samples_per_s.hi"]
    assert "dabench: unsteady" in done.stdout + done.stderr


def test_inside_a_multirun_unsteady_runs_are_recorded_and_the_sweep_goes_on(tmp_path):
    """A measured and a validate run, both disturbed: each recorded unsteady, the sweep goes on; a
    disturbed measurement cannot judge a prediction, so the validate run keeps the prediction beside it."""
    done = beside_busy_loops(tmp_path, [*SMALL, "run.remeasure=0", "hardware.mode=measure,validate", "-m"])
    children = [r for r in store_runs(tmp_path) if r[4].get("dabench.parent") != "true"]
    assert len(children) == 2, (done.returncode, done.stderr[-3000:])
    for status, state, reason, metrics, _ in children:
        assert (status, state) == ("unsteady", "FAILED") and reason.startswith("unsteady: got "), reason
        assert metrics["measure.attempts"] == 1
    # the validate run (and only it) keeps the prediction beside its measurement
    assert sorted("predict.throughput.samples_per_s" in r[3] for r in children) == [False, True]


def test_a_run_whose_estimate_exceeds_max_minutes_stops_with_one_line(run_cli, tmp_path):
    done = run_cli("run.max_minutes=0.0001", "run.warmup_steps=2", "tracking.system_metrics_interval_s=0", code=1)
    ((status, state, reason, _, _),) = store_runs(tmp_path)
    assert (status, state) == ("timeout", "FAILED")
    assert "stopped after 1 of" in reason and "more than run.max_minutes=0.0001" in reason
    assert "cheaper: python -m dabench" in reason and "hardware.mode=predict" in reason
    assert "stopped after 1 of" in done.stdout + done.stderr


def test_an_unwritable_cache_folder_does_not_stop_a_measured_run(run_cli, tmp_path):
    (tmp_path / "a_file").write_text("")
    env = {"DABENCH_CACHE_DIR": str(tmp_path / "a_file" / "cache"), "DABENCH_MAX_LOAD_PER_CORE": "64"}
    done = run_cli(*SMALL, env=env, code=0)
    said = [line for line in (done.stdout + done.stderr).splitlines() if "calibration cache:" in line]
    assert len(said) == 1 and "cannot be written" in said[0], done.stdout[-3000:] + done.stderr[-3000:]
    ((status, _, _, _, _),) = store_runs(tmp_path)
    assert status == "ok"
