"""Ctrl-C (SIGINT), SIGTERM and SIGKILL against real ``python -m dabench`` processes.

No timing luck: each child runs with ``DABENCH_FAULT=run_body:hold@N`` (dabench/runtime/faults.py), so its
N-th run stops after its MLflow run is open and writes its pid to a ready file; the test signals
it only once the file says so (a barrier), then checks the exit status, the one line and the store.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from tests import forkserver
from tests.conftest import cli_env, default_sigint, run_dabench

pytestmark = pytest.mark.slow
SINGLE = ["hardware=ipu", "parallel=pp", "run.grad_accum=3", "hardware.mode=predict"]
STUDY = ["+sweeps=ipu_deploy", "model=tiny", "model.n_layers=4", "hydra.sweeper.n_trials=4"]


def start(tmp_path: Path, args: list[str], hold: str | None, ready: Path) -> subprocess.Popen | forkserver.Forked:
    env = cli_env(tmp_path)
    if hold:
        env["DABENCH_FAULT"] = f"run_body:{hold}"
        env["DABENCH_FAULT_READY"] = str(ready)
    return forkserver.start(args, tmp_path, env, preexec_fn=default_sigint)


def wait_ready(proc: subprocess.Popen, ready: Path, deadline_s: float = 300) -> int:
    """The pid the child wrote when it reached the hold point (polls a file the child writes:
    the child's progress, not a guess of how long it takes, decides when the test goes on)."""
    end = time.monotonic() + deadline_s
    while not (ready.exists() and ready.read_text().strip()):
        if proc.poll() is not None:
            raise AssertionError(f"child ended before the hold point: {proc.communicate()}")
        assert time.monotonic() < end, "child never reached the hold point"
        time.sleep(0.05)
    return int(ready.read_text().split()[0])


def interrupt(tmp_path, args, hold, sig):
    ready = tmp_path / "ready"
    proc = start(tmp_path, args, hold, ready)
    pid = wait_ready(proc, ready)
    assert pid == proc.pid
    os.kill(pid, sig)
    out, err = proc.communicate(timeout=300)
    ready.unlink()
    return proc.returncode, out, err


def all_runs(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    return client, client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=1000)


def last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)")]
)
def test_signal_in_a_single_run(tmp_path, sig, code, word):
    rc, out, err = interrupt(tmp_path, SINGLE, "hold", sig)
    assert rc == code, err[-2000:]
    assert "Traceback" not in err + out
    _, runs = all_runs(tmp_path)
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "KILLED" and run.data.tags["dabench.status"] == "interrupted"
    assert last_line(err) == f"dabench: {word}; run {run.info.run_id} recorded interrupted (KILLED)"
    if sig == signal.SIGTERM:
        assert "SIGTERM" in run.data.tags["dabench.reason"]


def test_ctrl_c_in_a_multirun_closes_its_parent_with_the_runs_so_far(tmp_path):
    args = ["hardware.mode=predict", "run.batch_size=1,2,3,4,5,6,7,8", "-m"]
    rc, out, err = interrupt(tmp_path, args, "hold@4", signal.SIGINT)
    assert rc == 130 and "Traceback" not in err + out, err[-2000:]
    _, runs = all_runs(tmp_path)
    parent = next(r for r in runs if r.data.tags.get("dabench.parent") == "true")
    children = [r for r in runs if r is not parent]
    assert len(children) == 4 and not any(r.info.status == "RUNNING" for r in runs)
    assert sorted(r.data.tags["dabench.status"] == "interrupted" for r in children) == [False, False, False, True]
    assert parent.info.status == "KILLED" and parent.data.tags["dabench.status"] == "interrupted"
    assert parent.data.metrics["jobs.total"] == 4 and parent.data.metrics["jobs.interrupted"] == 1
    line = last_line(err)
    assert line.startswith("dabench: interrupted after 3 of 8 runs; run "), line
    assert f"parent run {parent.info.run_id} closed KILLED" in line
    assert line.endswith("run again with: python -m dabench hardware.mode=predict run.batch_size=1,2,3,4,5,6,7,8 -m")


def test_ctrl_c_in_a_study_then_resume_ends_with_exactly_n_trials(tmp_path):
    rc, out, err = interrupt(tmp_path, [*STUDY, "-m"], "hold@3", signal.SIGINT)
    assert rc == 130 and "Traceback" not in err + out, err[-2000:]
    line = last_line(err)
    assert line.startswith("dabench: interrupted after 2 of 4 trials; run "), line
    assert line.endswith("resume with: python -m dabench " + " ".join(STUDY) + " -m")
    storage = f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}"
    (name,) = optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=name, storage=storage)
    cut = study.trials[2]
    assert cut.state == TrialState.FAIL and cut.user_attrs["dabench.status"] == "interrupted"
    waiting = [t for t in study.trials if t.state == TrialState.WAITING]
    assert [t.system_attrs.get("fixed_params") for t in waiting] == [cut.params]  # its settings are tried again
    _, runs = all_runs(tmp_path)
    parent = next(r for r in runs if r.data.tags.get("dabench.parent") == "true")
    assert parent.info.status == "KILLED" and parent.data.tags["dabench.status"] == "interrupted"
    assert not any(r.info.status == "RUNNING" for r in runs)

    done = run_dabench(*STUDY, "-m", cwd=tmp_path, code=None)
    assert done.returncode == 0, done.stderr[-3000:]
    study = optuna.load_study(study_name=name, storage=storage)
    from dabench.tune.study import counts_toward_budget, trials_done

    assert trials_done(study) == 4
    counted = [t for t in study.trials if counts_toward_budget(t)]
    assert cut.params in [t.params for t in counted] and cut.number not in [t.number for t in counted]
    _, runs = all_runs(tmp_path)
    parents = [r for r in runs if r.data.tags.get("dabench.parent") == "true"]
    assert [p.info.status for p in parents] == ["FINISHED"] and "dabench.status" not in parents[0].data.tags
    assert not any(r.info.status == "RUNNING" for r in runs)


def test_sigkill_then_the_next_start_marks_the_run_killed(tmp_path):
    ready = tmp_path / "ready"
    proc = start(tmp_path, SINGLE, "hold", ready)
    pid = wait_ready(proc, ready)
    os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    _, (orphan,) = all_runs(tmp_path)
    assert orphan.info.status == "RUNNING" and orphan.data.tags["dabench.pid"] == str(pid)

    done = run_dabench(*SINGLE, cwd=tmp_path, code=None)
    assert done.returncode == 0, done.stderr[-3000:]
    client, runs = all_runs(tmp_path)
    old = client.get_run(orphan.info.run_id)
    assert old.info.status == "KILLED" and old.data.tags["dabench.status"] == "killed"
    assert f"process {pid} on " in old.data.tags["dabench.reason"]
    assert sorted(r.info.status for r in runs) == ["FINISHED", "KILLED"]


def _corrupt(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database, it was cut in half\x00" * 200)


@pytest.mark.parametrize(
    "which,args",
    [
        ("mlflow.db", ["hardware.mode=predict", "run.batch_size=1,2", "-m"]),
        ("mlflow.db", [*STUDY, "-m"]),
        ("mlruns/optuna.db", [*STUDY, "-m"]),
    ],
)
def test_a_corrupt_store_is_one_line_before_any_work(tmp_path, which, args):
    _corrupt(tmp_path / which)
    done = run_dabench(*args, cwd=tmp_path, code=None)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr + done.stdout
    line = last_line(done.stderr)
    assert re.match(r"dabench: pre-flight: (tracking\.uri|hydra\.sweeper\.storage)=.*not a usable database", line), line
    assert not list(tmp_path.glob("multirun/**/artifacts")), "no job ran"
    if which == "mlruns/optuna.db":  # the tracking store is fine: nothing was recorded in it
        _, runs = all_runs(tmp_path) if (tmp_path / "mlflow.db").exists() else (None, [])
        assert runs == []


def test_sigterm_in_a_grid_leaves_whole_runs_and_a_killed_parent(tmp_path):
    """The signal lands while the grid writes its batches (after the first is in the store): every
    run it wrote is whole and closed, the parent says the grid stopped short, the store is sound."""
    import sqlite3

    args = ["grid", f"run.batch_size={','.join(map(str, range(1, 401)))}", "hardware.mode=predict"]
    proc = forkserver.start(args, tmp_path, cli_env(tmp_path), preexec_fn=default_sigint)
    db, end = tmp_path / "mlflow.db", time.monotonic() + 120
    while True:  # the store's own progress decides when: the first batch of 100 runs written
        assert proc.poll() is None and time.monotonic() < end, "the grid ended before its first batch"
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                if conn.execute("select count(*) from runs").fetchone()[0] > 100:
                    break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "Traceback" not in err and last_line(err) == "dabench grid: terminated (SIGTERM)"
    _, runs = all_runs(tmp_path)
    parent = next(r for r in runs if r.data.tags.get("dabench.parent") == "true")
    assert not any(r.info.status == "RUNNING" for r in runs)
    assert parent.info.status == "KILLED" and parent.data.tags["dabench.status"] == "interrupted"
    assert parent.data.metrics["jobs.total"] == len(runs) - 1 < 400
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
