"""Predict-mode trials per second with 1, 2 and 4 workers on one study, against a PostgreSQL
study store and an mlflow server backed by PostgreSQL.

    python benchmarks/scale_out.py [--trials 16] [--workers 1,2,4]

1. Start a throwaway PostgreSQL (Debian's package) and ``mlflow server --workers 1`` on
   127.0.0.1 (tests/scaleout/servers.py), as in docs/scale-out.md.
2. For each worker count W: a fresh study of ``--trials`` trials on the RDU predict grid
   (``+sweeps=rdu_deploy hydra.sweeper.space.hook=null``: 45 deployments); W independent
   ``python -m dabench ... -m`` processes started at the same moment; wait for all.
3. Report, per W: ``trials/s`` = trials / (last trial's end - first trial's start) from the study
   store (the trial loop itself: each worker's ~10 s of imports before its first trial is left
   out), the ratio to W=1, and ``wall_trials/s`` = trials / wall time of the whole command
   (imports included).

Every trial is a full dabench job: compose, predict, write artifacts, record an MLflow child run
through the server. Scaling stops at the machine's cores (printed) or at the server. The numbers
are PREDICT-mode runs: what is timed is dabench's own per-trial cost, not a device.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402

from tests.scaleout.servers import mlflow_server, postgres, why_no_postgres  # noqa: E402
from tests.scaleout.workers import start_worker, worker_command  # noqa: E402


def run(workers: int, trials: int, storage: str, uri: str, folder: Path) -> tuple[float, float, int]:
    """(loop trials/s, wall trials/s, counted trials) of one study run by ``workers`` workers."""
    name = f"scale-{workers}-{int(time.time())}"
    folder.mkdir(parents=True, exist_ok=True)
    command = worker_command(name, storage, uri, trials)
    start = time.perf_counter()
    processes = [start_worker(folder, command, folder / f"worker{i}.log") for i in range(workers)]
    for i, process in enumerate(processes):
        if process.wait() != 0:
            raise SystemExit(f"worker {i} failed: {(folder / f'worker{i}.log').read_text()[-3000:]}")
    wall = time.perf_counter() - start
    study = optuna.load_study(study_name=name, storage=storage)
    ran = [t for t in study.get_trials() if t.user_attrs.get("dabench.status") != "skipped"]
    first = min(t.datetime_start for t in ran)
    last = max(t.datetime_complete for t in ran)
    return len(ran) / (last - first).total_seconds(), len(ran) / wall, len(ran)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    reason = why_no_postgres()
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    counts = [int(w) for w in args.workers.split(",")]
    cores = len(os.sched_getaffinity(0))
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="dabench-scale-") as tmp,
        postgres() as pg,
        mlflow_server(pg.url("mlflow")) as server,
    ):
        print(
            f"cpus={cores} trials={args.trials} study store=PostgreSQL tracking=mlflow server --workers 1 "
            f"loadavg_before={open('/proc/loadavg').read().split()[0]}",
            flush=True,
        )
        base = None
        for workers in counts:
            loop, wall, n = run(workers, args.trials, pg.url("optuna"), server.uri, Path(tmp) / f"w{workers}")
            base = base or loop
            print(
                f"workers={workers} trials={n} trials/s={loop:.3f} ratio_to_1={loop / base:.2f} "
                f"wall_trials/s={wall:.3f} loadavg={open('/proc/loadavg').read().split()[0]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
