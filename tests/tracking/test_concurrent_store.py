"""Item 1: concurrent writers on a fresh default SQLite store all record their runs.

The writers are released together by a multiprocessing.Barrier after their imports, so they
meet the store's first-use schema creation at the same moment (no sleeps)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from concurrent.futures import ProcessPoolExecutor

import pytest

from dabench.tracking.store import is_locked_error, retry_locked, sqlite_path, store_lock
from tests import forkserver
from tests.tracking import _store_worker

WRITERS = 8


def _released_together(worker, jobs: list[tuple], timeout: float) -> list:
    """``worker(*job, barrier)`` for each job, each in its own process, all released at once by one
    multiprocessing.Barrier (the worker waits on it after its imports); the results in job order.
    The processes are forks of multiprocessing's fork server, which imported the third-party
    libraries once (tests/forkserver.py's list); each opens the store itself after the fork."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(forkserver.PRELOAD))
    with ProcessPoolExecutor(max_workers=len(jobs), mp_context=ctx) as pool, ctx.Manager() as manager:
        barrier = manager.Barrier(len(jobs))
        futures = [pool.submit(worker, *job, barrier) for job in jobs]
        return [f.result(timeout=timeout) for f in futures]


def _healthy(db) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_retry_locked_retries_only_lock_errors():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    waits: list[float] = []
    assert retry_locked(flaky, sleep=waits.append) == "done"
    assert len(calls) == 3 and len(waits) == 2 and all(0 < w <= 3.0 for w in waits)
    with pytest.raises(ValueError):
        retry_locked(lambda: (_ for _ in ()).throw(ValueError("other")), sleep=waits.append)
    with pytest.raises(sqlite3.OperationalError):
        retry_locked(
            lambda: (_ for _ in ()).throw(sqlite3.OperationalError("database is locked")),
            retries=2,
            sleep=lambda s: None,
        )
    assert is_locked_error(Exception("(sqlite3.OperationalError) database is locked"))


def test_store_lock_is_exclusive_between_processes(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert sqlite_path(uri) == tmp_path / "mlflow.db"
    import fcntl

    with store_lock(uri):
        lock = tmp_path / "mlflow.db.lock"
        with open(lock, "a") as other:  # a second open file description, as another process has
            with pytest.raises(BlockingIOError):
                fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(tmp_path / "mlflow.db.lock", "a") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


@pytest.mark.slow
def test_eight_writers_on_a_fresh_store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_ids = _released_together(_store_worker.log_one, [(uri, i) for i in range(WRITERS)], timeout=300)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("concurrent")
    runs = client.search_runs([experiment.experiment_id], max_results=100)
    assert sorted(r.info.run_id for r in runs) == sorted(run_ids)
    for run in runs:
        index = int(run.data.params["index"])
        assert run.info.status == "FINISHED"
        assert run.data.metrics == {f"m.{k}": float(index * 1000 + k) for k in range(_store_worker.N_METRICS)}
    _healthy(tmp_path / "mlflow.db")


@pytest.mark.slow
def test_eight_cli_runs_at_once_on_a_fresh_default_store(tmp_path):
    """`python -m dabench hardware=ipu parallel=pp` x8, released together: 8 runs, all metrics."""
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    # one launch dir (so one default store); each job its own Hydra output dir
    jobs = [
        (str(tmp_path), ["hardware=ipu", "parallel=pp", "run.grad_accum=3", f"hydra.run.dir=outputs/w{i}"])
        for i in range(WRITERS)
    ]
    codes = _released_together(_store_worker.cli, jobs, timeout=600)
    assert codes == [0] * WRITERS
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("dabench").experiment_id], max_results=100)
    assert len(runs) == WRITERS
    metric_keys = {frozenset(r.data.metrics) for r in runs}
    assert len(metric_keys) == 1 and len(next(iter(metric_keys))) > 10  # every run has the same full set
    assert all(r.info.status == "FINISHED" and r.data.tags["dabench.status"] == "ok" for r in runs)
    _healthy(tmp_path / "mlruns" / "mlflow.db")
