"""The run lifecycle against a real SQLite MLflow store: every exit path closes the run with real times."""

import time

import pytest

from dabench.core.status import Status
from dabench.tracking.lifecycle import BatchRecorder, PendingRun, open_run, recorded_run


@pytest.fixture
def uri(tmp_path):
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def _run(uri, run_id):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_run(run_id)


def test_normal_exit_uses_the_status_vocabulary(uri, monkeypatch):
    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)
    before = int(time.time() * 1000)
    with recorded_run(experiment="t", uri=uri, run_name="a") as run:
        assert _run(uri, run.run_id).info.status == "RUNNING"  # open while the work runs
        time.sleep(0.05)
        run.log(params={"p": 1}, metrics={"m": 2.0}, tags={"x": "y"})
        run.set_status("capacity", "too big")
    got = _run(uri, run.run_id)
    assert got.info.status == "FAILED" and got.data.tags["dabench.status"] == "capacity"
    assert got.data.tags["dabench.reason"] == "too big" and got.data.params["p"] == "1"
    assert before <= got.info.start_time and got.info.end_time - got.info.start_time >= 50
    with recorded_run(experiment="t", uri=uri, run_name="b") as ok:
        pass
    assert _run(uri, ok.run_id).info.status == "FINISHED"


def test_exception_is_crashed_and_reraised(uri):
    with pytest.raises(RuntimeError):
        with recorded_run(experiment="t", uri=uri, run_name="c") as run:
            raise RuntimeError("boom")
    got = _run(uri, run.run_id)
    assert got.info.status == "FAILED" and got.data.tags["dabench.status"] == "crashed"
    assert "boom" in got.data.tags["dabench.reason"] and got.info.end_time is not None


def test_ctrl_c_is_interrupted_and_killed(uri):
    with pytest.raises(KeyboardInterrupt):
        with recorded_run(experiment="t", uri=uri, run_name="d") as run:
            raise KeyboardInterrupt
    got = _run(uri, run.run_id)
    assert got.info.status == "KILLED" and got.data.tags["dabench.status"] == "interrupted"


def test_open_and_close_in_separate_calls(uri):
    run = open_run(experiment="t", uri=uri, run_name="parent", parent_id="")
    run.status_tags = False
    run.close(Status.OK)
    got = _run(uri, run.run_id)
    assert got.info.status == "FINISHED" and "dabench.status" not in got.data.tags


def test_batch_keeps_each_runs_times(uri):
    with BatchRecorder(experiment="t", uri=uri, parent_id="", flush_every=2) as batch:
        with batch.run("one") as r:
            time.sleep(0.03)
            r.metrics["m"] = 1.0
        with pytest.raises(ValueError):
            with batch.run("two"):
                raise ValueError("bad")
        batch.add(PendingRun("three", start_ms=1_000_000, end_ms=1_000_500, status=Status.INTERRUPTED))
    assert len(batch.run_ids) == 3
    one, two, three = (_run(uri, i) for i in batch.run_ids)
    assert one.info.status == "FINISHED" and one.info.end_time - one.info.start_time >= 30
    assert one.data.metrics["m"] == 1.0
    assert two.info.status == "FAILED" and two.data.tags["dabench.status"] == "crashed"
    assert (three.info.start_time, three.info.end_time, three.info.status) == (1_000_000, 1_000_500, "KILLED")


def test_a_signal_between_a_batched_runs_writes_ends_it_and_keeps_the_rest(uri, monkeypatch):
    """Ctrl-C or SIGTERM (a KeyboardInterrupt) after the second run was created: it is ended
    KILLED, not left RUNNING, and the third waits for the next flush."""
    from mlflow.tracking import MlflowClient

    from dabench.tracking import lifecycle

    written = []

    def write_batch(client, run_id, *args, **kwargs):
        written.append(run_id)
        if len(written) == 2:
            raise KeyboardInterrupt
        return real(client, run_id, *args, **kwargs)

    real = lifecycle.write_batch
    monkeypatch.setattr(lifecycle, "write_batch", write_batch)
    batch = BatchRecorder(experiment="t", uri=uri, parent_id="", flush_every=10)
    for name in ("one", "two", "three"):
        batch.add(PendingRun(name, start_ms=1_000_000, end_ms=1_000_500))
    with pytest.raises(KeyboardInterrupt):
        batch.flush()
    assert [p.run_name for p in batch.pending] == ["three"]
    batch.flush()
    runs = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("t").experiment_id])
    assert sorted((r.info.run_name, r.info.status) for r in runs) == [
        ("one", "FINISHED"),
        ("three", "FINISHED"),
        ("two", "KILLED"),
    ]


def test_parent_run_counts_its_children_and_an_adopted_one_counts_them_all(uri, monkeypatch):
    """Opened, interrupted, adopted by the next invocation and finished: the counts cover every
    child, as a fresh parent's would, and the interrupted tags are gone."""
    from mlflow.tracking import MlflowClient

    from dabench.tracking.lifecycle import ParentRun

    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)

    def child(parent, status, value):
        with recorded_run(experiment="t", uri=uri, run_name=status, parent_id=parent.run_id) as run:
            run.log(metrics={"throughput.samples_per_s": value})
            run.set_status(status)

    with pytest.raises(KeyboardInterrupt):
        with ParentRun.start("study", experiment="t", uri=uri, run_name="s", note="n") as first:
            child(first, "ok", 5.0)
            raise KeyboardInterrupt
    got = _run(uri, first.run_id)
    assert got.info.status == "KILLED" and got.data.tags["dabench.status"] == "interrupted"
    assert "study was interrupted" in got.data.tags["dabench.reason"] and got.data.metrics["jobs.total"] == 1
    again = ParentRun.adopt(MlflowClient(tracking_uri=uri), first.run_id, uri)
    assert again.kind == "study" and _run(uri, first.run_id).info.status == "RUNNING"
    child(again, "ok", 7.0)
    child(again, "capacity", 9.0)
    assert again.finish() == {"ok": 2, "capacity": 1} and again.finish() == {}
    got = _run(uri, first.run_id)
    assert got.info.status == "FINISHED" and "dabench.status" not in got.data.tags
    assert got.data.metrics["jobs.total"] == 3 and got.data.metrics["jobs.best_samples_per_s"] == 7.0
    assert got.data.tags["dabench.parent"] == "true" and got.data.tags["dabench.parent_kind"] == "study"
