"""Child-process bodies for tests/tracking/test_concurrent_store.py (forks of multiprocessing's
fork server, which imported only third-party libraries: each child imports dabench and opens the
store itself, as separate `python -m dabench` processes do)."""

from __future__ import annotations

import os
import runpy
import sys

N_METRICS = 40


def log_one(uri: str, index: int, barrier) -> str:
    """Import everything first, wait at the barrier, then open the store and log one run."""
    from mlflow.entities import Metric, Param

    from dabench.tracking.store import client_and_experiment

    barrier.wait()
    client, experiment_id = client_and_experiment(uri, "concurrent")
    run = client.create_run(experiment_id, run_name=f"writer-{index}")
    metrics = [Metric(f"m.{k}", float(index * 1000 + k), 0, 0) for k in range(N_METRICS)]
    client.log_batch(run.info.run_id, metrics=metrics, params=[Param("index", str(index))])
    client.set_terminated(run.info.run_id, status="FINISHED")
    return run.info.run_id


def cli(workdir: str, argv: list[str], barrier) -> int:
    """`python -m dabench argv` launched from ``workdir`` with the default store (no
    $MLFLOW_TRACKING_URI), released by the barrier once the imports are done."""
    os.chdir(workdir)
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    os.environ.pop("DABENCH_PARENT_RUN_ID", None)
    import mlflow.tracking  # noqa: F401  (the slow imports happen before the barrier)

    import dabench.cli.run  # noqa: F401

    sys.argv = ["dabench", *argv]
    barrier.wait()
    try:
        runpy.run_module("dabench", run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return int(done.code or 0)
    return 0
