"""No run left RUNNING, and ``ok`` only when every metric and artifact was written.

Faults come from dabench/runtime/faults.py (``$DABENCH_FAULT``, deterministic) and, where the machine
allows it, from a real full or read-only tmpfs. Every run here is a predicted IPU run recorded
in a temp SQLite store through :func:`dabench.pipeline.record.record_run` (the Hydra task's path).
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from dabench.config.compose import compose
from dabench.core.status import DiskFull, Status
from dabench.pipeline.job import prepare
from dabench.pipeline.record import record_run
from dabench.runtime.interrupts import Terminated
from dabench.tracking.lifecycle import recorded_run

ARGS = ["hardware=ipu", "parallel=pp", "run.grad_accum=3", "hardware.mode=predict"]


@pytest.fixture
def store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)
    monkeypatch.delenv("DABENCH_FAULT", raising=False)
    return uri


def only_run(uri):
    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 1
    return runs[0]


def recorded(tmp_path, artifacts_dir=None):
    container = compose(ARGS)
    return record_run(prepare(container), artifacts_dir=artifacts_dir or tmp_path / "run" / "artifacts")


def test_an_ok_run_is_finished_with_its_owner(store, tmp_path):
    result, run_id = recorded(tmp_path)
    run = only_run(store)
    assert result.status is Status.OK and run.info.status == "FINISHED"
    assert run.data.tags["dabench.status"] == "ok"
    assert run.data.tags["dabench.pid"] == str(os.getpid())
    assert run.data.tags["dabench.host"] == os.uname().nodename
    assert run.data.tags["dabench.process_start"].startswith("20") and ":" in run.data.tags["dabench.process_key"]


@pytest.mark.parametrize(
    "fault,status,words",
    [
        ("artifacts:ENOSPC", "disk_full", "No space left on device"),
        ("log_artifacts:ENOSPC", "disk_full", "No space left on device"),
        ("artifacts:EROFS", "tracking_error", "Read-only file system"),
        ("artifacts:EACCES", "tracking_error", "Permission denied"),
        ("tracking_log", "tracking_error", "tracking store is unreachable"),
    ],
)
def test_a_write_that_fails_is_never_ok(store, tmp_path, monkeypatch, fault, status, words):
    monkeypatch.setenv("DABENCH_FAULT", fault)
    result, _ = recorded(tmp_path)
    run = only_run(store)
    assert result.status.value == status and words in result.reason
    assert run.info.status == "FAILED"
    assert run.data.tags["dabench.status"] == status and words in run.data.tags["dabench.reason"]


def test_a_store_gone_for_good_leaves_the_run_to_the_reaper(store, tmp_path, monkeypatch):
    monkeypatch.setenv("DABENCH_FAULT", "tracking_log,tracking_close")
    result, run_id = recorded(tmp_path)
    assert result.status is Status.TRACKING_ERROR and "could not be closed" in result.reason
    assert only_run(store).info.status == "RUNNING"  # nothing could end it: the reaper will (test_reaper.py)


def _mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


@pytest.mark.parametrize("options,status", [("size=8k", "disk_full"), ("ro,size=64k", "tracking_error")])
def test_a_real_full_or_read_only_folder(store, tmp_path, options, status):
    """Beyond the fault hook: the artifact folder on a real 8 KiB tmpfs (ENOSPC) or a read-only
    one (EROFS). Needs root (mount); skipped otherwise."""
    folder = tmp_path / "small"
    if not _mount_tmpfs(folder, options):
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        result, _ = recorded(tmp_path, artifacts_dir=folder / "artifacts")
    finally:
        subprocess.run(["umount", str(folder)], check=True)
    run = only_run(store)
    assert result.status.value == status and run.info.status == "FAILED"
    assert run.data.tags["dabench.status"] == status


@pytest.mark.parametrize(
    "raised,status,state",
    [
        (RuntimeError("boom"), "crashed", "FAILED"),
        (DiskFull("store full"), "disk_full", "FAILED"),
        (OSError(28, "No space left on device"), "disk_full", "FAILED"),
        (RuntimeError("(sqlite3.OperationalError) database or disk is full"), "disk_full", "FAILED"),
        (KeyboardInterrupt(), "interrupted", "KILLED"),
        (Terminated(signal.SIGTERM), "interrupted", "KILLED"),
    ],
)
def test_every_exit_path_of_a_run_closes_it(store, raised, status, state):
    with pytest.raises(type(raised)):
        with recorded_run(experiment="exits", uri=store, run_name=f"r{uuid.uuid4().hex[:6]}", status_tags=False):
            raise raised
    run = only_run(store)
    assert run.info.status == state and run.data.tags["dabench.status"] == status
    if isinstance(raised, Terminated):
        assert "SIGTERM" in run.data.tags["dabench.reason"]


@pytest.mark.slow
@pytest.mark.parametrize("fault,status", [("artifacts:ENOSPC", "disk_full"), ("tracking_log", "tracking_error")])
def test_the_cli_says_a_failed_write_in_one_line(tmp_path, fault, status):
    """``python -m dabench``: a full disk or a store lost after pre-flight is the summary line and
    exit 1, no traceback; the run is FAILED with its status."""
    from tests.conftest import run_dabench

    done = run_dabench(*ARGS, cwd=tmp_path, env={"DABENCH_FAULT": fault}, code=None)
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith(f"dabench: {status} | ")
    run = only_run(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert run.info.status == "FAILED" and run.data.tags["dabench.status"] == status
