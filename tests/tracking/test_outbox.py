"""The outbox: a sweep whose tracking server dies mid-run loses no record, leaves no run RUNNING
and makes no second parent; ``dabench sync`` replays it exactly once (dabench/tracking/outbox.py)."""

from __future__ import annotations

import csv
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
    from dabench.tracking.outbox import Journal, replay, scan

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
    assert "1 runs replayed" in done.stdout and " 0 left" in done.stdout and not scan(tmp_path / "outbox")[0]
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
    from dabench.tracking.outbox import Journal, replay, scan

    outbox = tmp_path / "outbox"
    journal = Journal.new(
        uri="http://127.0.0.1:1", experiment="dabench", run_name="r", start_ms=1, tags={}, parent=None, folder=outbox
    )
    journal.close(Status.OK, "", 2, status_tags=True)
    report = replay(f"sqlite:///{tmp_path / 'other.db'}", outbox)
    assert (report.synced, report.left) == (0, 1) and len(scan(outbox)[0]) == 1
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


# --- what waits: listed, counted, kept when damaged, replayed once by concurrent syncs ----------


def _kept(outbox: Path, uri: str, name: str, parent: str | None = None, value: float = 1.0, **extra):
    """A closed journal of a run named ``name`` kept for ``uri`` (a real store)."""
    from dabench.core.status import Status
    from dabench.tracking.outbox import Journal

    journal = Journal.new(
        uri=uri, experiment="dabench", run_name=name, start_ms=1_000, tags={}, parent=parent, folder=outbox, **extra
    )
    journal.log({"run.batch_size": 4}, {"throughput.samples_per_s": value}, {"dabench.mode": "predict"})
    journal.close(Status.OK, "", 2_000, status_tags=True)
    return journal


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_sync_list_shows_what_waits_and_names_a_damaged_journal_changing_nothing(tmp_path):
    outbox, uri = tmp_path / "outbox", f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = _kept(outbox, uri, "waits-1")
    _kept(outbox, uri, "waits-2")
    (outbox / "0badc0de.json").write_text('{"version": 1, "id": "0badc0de", "metrics": ')  # cut off mid-write
    before = _tree(tmp_path)
    listed = run_dabench("sync", "--list", "--outbox", str(outbox), cwd=tmp_path, code=1)
    assert _tree(tmp_path) == before, "sync --list changed a file"
    assert first.id in listed.stdout and "'waits-1'" in listed.stdout and "'waits-2'" in listed.stdout
    assert "2 runs wait" in listed.stdout and "1 damaged journals" in listed.stdout
    (damaged,) = [line for line in listed.stderr.splitlines() if "0badc0de.json" in line]
    assert "damaged journal kept" in damaged
    assert not (tmp_path / "mlflow.db").exists()


def test_a_damaged_journal_is_kept_and_named_while_the_others_replay(tmp_path):
    from mlflow.tracking import MlflowClient

    outbox, uri = tmp_path / "outbox", f"sqlite:///{tmp_path / 'mlflow.db'}"
    _kept(outbox, uri, "good")
    bad = outbox / "feedface.json"
    bad.write_text('{"version": 1, "id": "feedface", "metrics": {"x": "fast"}}')
    done = run_dabench("sync", "--tracking-uri", uri, "--outbox", str(outbox), cwd=tmp_path, code=1)
    assert "1 runs replayed" in done.stdout and "1 left" in done.stdout
    assert [line for line in done.stdout.splitlines() if "feedface.json" in line and "damaged journal kept" in line]
    assert bad.read_text() == '{"version": 1, "id": "feedface", "metrics": {"x": "fast"}}'
    client = MlflowClient(uri)
    assert len(client.search_runs([client.get_experiment_by_name("dabench").experiment_id])) == 1


def test_two_syncs_at_once_replay_each_run_once(tmp_path):
    """The first sync stops inside its replay (after it created one run); a second one started
    then waits for it, writing nothing, and finds nothing left to add."""
    from mlflow.tracking import MlflowClient

    from dabench.tracking.outbox import ID_TAG, scan

    outbox, uri = tmp_path / "outbox", f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("dabench")
    ids = sorted(_kept(outbox, uri, f"r{i}").id for i in range(12))
    ready = tmp_path / "ready"
    argv = dabench_argv("sync", "--tracking-uri", uri, "--outbox", str(outbox))

    def start(name: str, fault: str | None):
        env = {**os.environ, "DABENCH_FAULT_READY": str(ready), **({"DABENCH_FAULT": fault} if fault else {})}
        with open(tmp_path / name, "w") as log:
            return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)

    def wait_for(condition, what: str) -> None:
        deadline = time.monotonic() + 120
        while not condition():
            assert time.monotonic() < deadline, what
            time.sleep(0.05)

    first = start(
        "first.log", "write.outbox:wait@4"
    )  # 1 folder, 2 its lock's folder, 3 lock file, 4 the journal after its run was made
    wait_for(lambda: ready.exists() and ready.read_text().strip(), "the first sync never got there")
    second = start("second.log", None)
    wait_for(lambda: "waiting for it" in (tmp_path / "second.log").read_text() or second.poll() is not None, "")
    assert "waiting for it" in (tmp_path / "second.log").read_text(), "the second sync did not wait"
    assert len(client.search_runs([experiment])) == 1 and second.poll() is None
    Path(f"{ready}.go").touch()
    assert [first.wait(300), second.wait(300)] == [0, 0]
    outputs = (tmp_path / "first.log").read_text() + (tmp_path / "second.log").read_text()
    assert "12 runs replayed" in outputs and "0 runs replayed, 0 already in the store, 0 left" in outputs
    runs = client.search_runs([experiment], max_results=100)
    assert sorted(r.data.tags[ID_TAG] for r in runs) == ids, outputs
    assert not scan(outbox)[0]


def test_a_sweeps_counts_and_results_table_include_the_runs_that_wait(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from dabench.report.results import record_sweep_results
    from dabench.tracking.outbox import replay, waiting_runs
    from dabench.tracking.writes import log_child_counts

    outbox, uri = tmp_path / "outbox", f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("DABENCH_OUTBOX", str(outbox))
    client = MlflowClient(uri)
    experiment = client.create_experiment("dabench")
    parent = client.create_run(experiment, run_name="sweep", tags={"dabench.parent": "true"}).info.run_id
    stored = client.create_run(experiment, run_name="stored", tags={"mlflow.parentRunId": parent})
    client.log_metric(stored.info.run_id, "throughput.samples_per_s", 3.0)
    client.set_tag(stored.info.run_id, "dabench.status", "ok")
    client.set_terminated(stored.info.run_id)
    cut = client.create_run(experiment, run_name="cut", tags={"mlflow.parentRunId": parent})  # left RUNNING
    _kept(outbox, uri, "cut", parent=parent, value=7.0, server_run_id=cut.info.run_id)  # its end waits
    _kept(outbox, uri, "offline", parent=parent, value=5.0)  # the whole run waits

    counts = log_child_counts(client, parent, waiting_runs(parent))  # as the multirun's parent counts them
    assert counts == {"ok": 3}
    metrics = client.get_run(parent).data.metrics
    assert metrics["jobs.total"] == 3 and metrics["jobs.best_samples_per_s"] == 7.0
    table = record_sweep_results(client, parent, tmp_path, "sweep results")
    assert "2 of these runs wait in the outbox" in table
    with open(tmp_path / "results.csv") as handle:
        rows = {row["run_name"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == ["cut", "offline", "stored"] and float(rows["cut"]["throughput"]) == 7.0

    report = replay(uri, outbox)
    assert (report.synced, report.left) == (2, 0)
    assert waiting_runs(parent) == [] and log_child_counts(client, parent) == {"ok": 3}  # the same once stored
    assert client.get_run(cut.info.run_id).info.status == "FINISHED"


def test_a_parent_that_waits_gets_the_table_of_its_waiting_children(tmp_path, monkeypatch):
    """The whole sweep waits (its parent too): the table and results.csv come from the outbox,
    and nothing is asked of the store."""
    from dabench.report.results import record_sweep_results
    from dabench.tracking.outbox import Journal

    outbox = tmp_path / "outbox"
    monkeypatch.setenv("DABENCH_OUTBOX", str(outbox))
    uri = "http://127.0.0.1:9"  # nothing listens
    parent = Journal.new(
        uri=uri, experiment="dabench", run_name="sweep", start_ms=1, tags={}, parent=None, folder=outbox
    )
    for i in range(3):
        _kept(outbox, uri, f"child{i}", parent=parent.run_id, value=float(i + 1))

    class NoStore:
        def __getattr__(self, name):
            raise AssertionError(f"the store was asked ({name})")

    table = record_sweep_results(NoStore(), parent.run_id, tmp_path, "multirun results")
    assert "3 of these runs wait in the outbox" in table and "also an artifact" not in table
    with open(tmp_path / "results.csv") as handle:
        assert sorted(row["run_name"] for row in csv.DictReader(handle)) == ["child0", "child1", "child2"]


def test_a_fifo_in_the_outbox_is_named_and_does_not_block(tmp_path):
    outbox, uri = tmp_path / "outbox", f"sqlite:///{tmp_path / 'mlflow.db'}"
    _kept(outbox, uri, "good")
    os.mkfifo(outbox / "fifo.json")  # a reader that opened it would wait for a writer forever
    listed = run_dabench("sync", "--list", "--outbox", str(outbox), cwd=tmp_path, code=1, timeout=120)
    assert "1 runs wait" in listed.stdout and "1 damaged journals" in listed.stdout
    assert [line for line in listed.stderr.splitlines() if "fifo.json" in line and "damaged journal kept" in line]
