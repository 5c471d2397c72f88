"""The outbox: a sweep whose tracking server dies mid-run loses no record, leaves no run RUNNING
and makes no second parent; ``dabench sync`` replays it exactly once (dabench/tracking/outbox.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import dabench_argv, run_dabench
from tests.scaleout.servers import free_port, start_mlflow

PREDICT = ["hardware=ipu", "hardware.mode=predict", "run.plots=never"]


def test_unreachable_is_told_from_a_refusal():
    from dabench.tracking.outbox import is_remote, is_unreachable

    assert is_unreachable(ConnectionRefusedError(111, "Connection refused"))
    wrapped = RuntimeError("API request to http://127.0.0.1:9/api failed")
    wrapped.__cause__ = OSError("Max retries exceeded with url")
    assert is_unreachable(wrapped)
    assert not is_unreachable(ValueError("RESOURCE_ALREADY_EXISTS: experiment exists"))
    assert is_remote("http://127.0.0.1:5000") and is_remote("postgresql://u@h/db")
    assert not is_remote("sqlite:////tmp/x.db") and not is_remote(None)


def test_a_journal_keeps_no_secret_and_replays_once(tmp_path, monkeypatch):
    """A run kept in the outbox replays into a store once; a second replay adds nothing."""
    from mlflow.tracking import MlflowClient

    from dabench.core.status import Status
    from dabench.tracking.outbox import Journal, pending, replay

    monkeypatch.setenv("DABENCH_OUTBOX", str(tmp_path / "outbox"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"  # the store the run was kept for (a local one, for the test)
    journal = Journal.new(
        uri=uri,
        experiment="dabench",
        run_name="r1",
        start_ms=1_000_000,
        tags={"dabench.mode": "predict"},
        parent=None,
    )
    journal.log({"tracking.uri": "http://bob:CANARY42@127.0.0.1:1"}, {"throughput.samples_per_s": 5.0}, {"x": "1"})
    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "result.json").write_text("{}")
    journal.add_artifacts(tmp_path / "art")
    journal.close(Status.OK, "", 1_000_500, status_tags=True)
    assert "CANARY42" not in journal.path.read_text()
    done = run_dabench("sync", "--tracking-uri", uri, "--outbox", str(tmp_path / "outbox"), cwd=tmp_path)
    assert "1 runs replayed" in done.stdout and " 0 left" in done.stdout and not pending(tmp_path / "outbox")
    assert replay(uri, tmp_path / "outbox").synced == 0
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    assert run.info.status == "FINISHED" and run.info.start_time == 1_000_000 and run.info.end_time == 1_000_500
    assert run.data.metrics["throughput.samples_per_s"] == 5.0 and run.data.tags["dabench.status"] == "ok"
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["result.json"]


def _stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@pytest.mark.slow
def test_a_server_killed_mid_sweep_and_restarted_loses_nothing(tmp_path):
    port = free_port()
    backend, artifacts, log = f"sqlite:///{tmp_path / 'server.db'}", tmp_path / "artifacts", tmp_path / "server.log"
    uri = f"http://127.0.0.1:{port}"
    server = start_mlflow(backend, port, artifacts, log)
    ready = tmp_path / "ready"
    env = {
        "MLFLOW_TRACKING_URI": uri,
        "DABENCH_FAULT": "run_body:wait@2",
        "DABENCH_FAULT_READY": str(ready),
        "DABENCH_OUTBOX": str(tmp_path / "outbox"),
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": "3",
    }
    sweep = subprocess.Popen(
        dabench_argv(*PREDICT, "model.n_layers=1,2,3,4", "-m"),
        cwd=tmp_path,
        env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not (ready.exists() and ready.read_text().strip()):
            assert sweep.poll() is None and time.monotonic() < deadline, "the sweep never reached its second run"
            time.sleep(0.2)
        _stop(server)  # the server dies while the second run is open
        Path(str(ready) + ".go").touch()
        output, _ = sweep.communicate(timeout=300)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, output[-3000:]
    assert "Traceback" not in output and "cannot be reached" in output
    server = start_mlflow(backend, port, artifacts, log)  # back, on the same address and store
    try:
        later = run_dabench(*PREDICT, cwd=tmp_path, env=env)  # the next start replays the outbox first
        assert "runs replayed" in later.stderr and " 0 left" in later.stderr, later.stderr[-2000:]
        again = run_dabench("sync", cwd=tmp_path, env=env)
        assert "nothing to replay" in again.stdout
        from mlflow.tracking import MlflowClient

        client = MlflowClient(uri)
        runs = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    finally:
        _stop(server)
    parents = [r for r in runs if r.data.tags.get("dabench.parent") == "true"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(runs) == 6  # the parent, its 4 children and the later run
    assert len(parents) == 1, [r.info.run_name for r in runs]
    assert sorted(r.data.params["model.n_layers"] for r in children) == ["1", "2", "3", "4"]
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in children)
    assert all(r.info.status == "FINISHED" and r.data.tags["dabench.status"] == "ok" for r in children)
    assert all(r.data.metrics["throughput.samples_per_s"] > 0 for r in children)
    assert parents[0].info.status == "FINISHED" and parents[0].data.metrics["jobs.total"] == 4
    assert not [r for r in runs if r.info.status == "RUNNING"]


def test_a_journal_is_replayed_only_into_the_store_it_was_kept_for(tmp_path, monkeypatch):
    """A sync (or the next start) on another store leaves the journal and says for which store."""
    from dabench.core.status import Status
    from dabench.tracking.outbox import Journal, pending, replay

    outbox = tmp_path / "outbox"
    journal = Journal.new(
        uri="http://127.0.0.1:1", experiment="dabench", run_name="r", start_ms=1, tags={}, parent=None, folder=outbox
    )
    journal.close(Status.OK, "", 2, status_tags=True)
    report = replay(f"sqlite:///{tmp_path / 'other.db'}", outbox)
    assert (report.synced, report.left) == (0, 1) and len(pending(outbox)) == 1
    assert "kept for another store: http://127.0.0.1:1" in report.line(outbox)
    assert not (tmp_path / "other.db").exists()
    secret = Journal.new(
        uri="http://bob:CANARY7@127.0.0.1:1",
        experiment="dabench",
        run_name="s",
        start_ms=1,
        tags={},
        parent=None,
        folder=outbox,
    )
    assert "CANARY7" not in secret.path.read_text()  # the store's URI is kept redacted
