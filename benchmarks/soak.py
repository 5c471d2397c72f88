"""Soak: 4 workers run one predicted study of N trials on PostgreSQL + an mlflow server, while
one worker is SIGKILLed and the server is killed and restarted mid-way. Nothing may be lost,
doubled or left open. Not in CI at full size (200 trials); tests/scaleout/test_soak.py runs
``--trials 20`` in the slow suite.

    python benchmarks/soak.py [--trials 200] [--workers 4]

1. A throwaway PostgreSQL (databases ``optuna`` and ``mlflow``) and ``mlflow server`` on it, on a
   fixed port (tests/scaleout/servers.py; docs/scale-out.md).
2. ``--workers`` independent ``python -m dabench +sweeps=rdu_deploy ... -m`` workers on one study,
   started together in one launch folder, on a space widened well past N: batch size
   choice(2, ..., 128) x precision x compile mode x gradient accumulation choice(1, 2) x the
   structured chips x tensor-parallel pairs (9 for GPT-2 small): 7 x 3 x 3 x 2 x 9 = 1,134
   deployments, so the study never runs out (tune/dedup.py ends a study early when it does).
3. Once a quarter of the trials are counted, worker 0 is SIGKILLed (its trial in flight is failed
   ``interrupted`` by the others and its settings run again). Once half are counted, the mlflow
   server is SIGKILLed; the workers keep going, their runs kept in the outbox
   (dabench/tracking/outbox.py); after ``--outage`` more counted trials (or 60 s) the server is
   started again on the same port and store.
4. When the workers are done: ``dabench sync`` (replays the outbox: each run exactly once) and
   ``dabench doctor`` (ends the killed worker's MLflow run, RUNNING since its process died).
5. Counts, from the study storage and the tracking server:

   - ``trials_counted``: trials that count toward the study's budget (must be N);
   - ``duplicates``: counted trials whose deployment (override set) an earlier one had (0);
   - ``parents``: MLflow parent runs of the study (1);
   - ``running``: MLflow runs and Optuna trials still RUNNING (0);
   - ``missing_records``: counted trials without their MLflow child run under the parent (0).

The last line says so: ``trials_counted=<n> duplicates=<n> parents=<n> running=<n>
missing_records=<n>``; exit 0 when they are N/0/1/0/0, else 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from dabench.tune.dedup import deployment_key  # noqa: E402
from dabench.tune.locking import study_lock  # noqa: E402
from dabench.tune.study import OVERRIDES_ATTR, counts_toward_budget  # noqa: E402
from tests.scaleout.servers import free_port, postgres, start_mlflow, why_no_postgres  # noqa: E402
from tests.scaleout.workers import start_worker, worker_command, worker_env  # noqa: E402

#: the predicted RDU study, widened to 1,134 deployments (module doc)
SPACE = ["+sweeps=rdu_deploy", "run.batch_size=choice(2, 4, 8, 16, 32, 64, 128)", "run.grad_accum=choice(1, 2)"]
#: a dead server is noticed in seconds, not after minutes of retries (the outbox takes over)
FAST_FAIL = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
WAIT_S = 3600


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def start_server(backend: str, port: int, artifacts: Path, log: Path, timeout_s: float = 300) -> subprocess.Popen:
    try:
        return start_mlflow(backend, port, artifacts, log, timeout_s)
    except RuntimeError as error:
        raise SystemExit(str(error)) from None


def kill_group(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)


def counted(study: optuna.Study) -> int:
    return sum(counts_toward_budget(t) for t in study.get_trials(deepcopy=False))


def dabench(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "dabench", *args],
        cwd=cwd,
        env=worker_env(env),
        capture_output=True,
        text=True,
        timeout=900,
    )
    say(f"dabench {args[0]}: exit {done.returncode}: {(done.stdout + done.stderr).strip().splitlines()[-3:]}")
    return done


def counts(study_name: str, storage: str, uri: str) -> dict[str, int]:
    from mlflow.tracking import MlflowClient

    trials = optuna.load_study(study_name=study_name, storage=storage).get_trials()
    good = [t for t in trials if counts_toward_budget(t)]
    keys = [deployment_key(t.user_attrs.get(OVERRIDES_ATTR, [])) for t in good]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("dabench").experiment_id
    runs = client.search_runs([experiment], max_results=50_000)
    parents = [
        r for r in runs if r.data.tags.get("dabench.parent") == "true" and r.data.tags.get("optuna.study") == study_name
    ]
    parent_ids = {p.info.run_id for p in parents}
    recorded = {
        int(r.data.tags["optuna_trial"])
        for r in runs
        if r.data.tags.get("optuna_study") == study_name
        and r.data.tags.get("mlflow.parentRunId") in parent_ids
        and "optuna_trial" in r.data.tags
    }
    running = sum(r.info.status == "RUNNING" for r in runs) + sum(t.state == TrialState.RUNNING for t in trials)
    statuses: dict[str, int] = {}
    for t in trials:
        if not counts_toward_budget(t):
            key = str(t.user_attrs.get("dabench.status", t.state.name))
            statuses[key] = statuses.get(key, 0) + 1
    say(
        f"{len(trials)} trials in all: {len(good)} counted, not counted: {statuses or 'none'}; "
        f"{len(runs)} MLflow runs in the experiment"
    )
    return {
        "trials_counted": len(good),
        "duplicates": len(keys) - len(set(keys)),
        "parents": len(parents),
        "running": running,
        "missing_records": sum(t.number not in recorded for t in good),
    }


def soak(n: int, workers: int, outage: int, folder: Path) -> dict[str, int]:
    started = time.monotonic()
    with postgres() as pg:
        storage, backend = pg.url("optuna"), pg.url("mlflow")
        port = free_port()
        uri = f"http://127.0.0.1:{port}"
        artifacts, server_log = folder / "artifacts", folder / "server.log"
        server = start_server(backend, port, artifacts, server_log)
        say(f"PostgreSQL on {pg.port}, mlflow server on {uri} (first start migrates its schema)")
        try:
            name = f"soak-{n}-{int(time.time())}"
            command = worker_command(name, storage, uri, n, sweep=SPACE)
            logs = [folder / f"worker{i}.log" for i in range(workers)]
            procs = [start_worker(folder, command, log, FAST_FAIL) for log in logs]  # together, one folder
            say(f"{workers} workers started on study {name}, n_trials={n}")
            study = None
            killed = outage_at = restarted = None
            deadline = time.monotonic() + WAIT_S
            while any(p.poll() is None for p in procs):
                if time.monotonic() > deadline:
                    raise SystemExit("the workers did not finish in time")
                time.sleep(1)
                try:
                    if study is None:
                        with study_lock(storage, "dabench-schema"):  # not while a worker creates the schema
                            study = optuna.load_study(study_name=name, storage=storage)
                    done = counted(study)
                except KeyError:  # the study is not created yet
                    continue
                if killed is None and done >= n // 4 and procs[0].poll() is None:
                    kill_group(procs[0])
                    killed = done
                    say(f"worker 0 SIGKILLed at {done} counted trials")
                elif killed is not None and outage_at is None and done >= n // 2:
                    kill_group(server)
                    outage_at, outage_t = done, time.monotonic()
                    say(f"mlflow server SIGKILLed at {done} counted trials")
                elif (
                    outage_at is not None
                    and restarted is None
                    and (done >= outage_at + outage or time.monotonic() - outage_t > 60 or done >= n)
                ):
                    server = start_server(backend, port, artifacts, server_log)
                    restarted = done
                    say(f"mlflow server restarted at {done} counted trials")
            for i, (proc, log) in enumerate(zip(procs, logs, strict=True)):
                if i and proc.returncode != 0:
                    raise SystemExit(f"worker {i} failed (exit {proc.returncode}): {log.read_text()[-3000:]}")
            if restarted is None:
                if outage_at is not None:
                    server = start_server(backend, port, artifacts, server_log)
                raise SystemExit(
                    f"the study ended before the faults were injected (killed={killed}, outage={outage_at})"
                )
            say(f"workers done after {time.monotonic() - started:.0f} s")
            env = {"MLFLOW_TRACKING_URI": uri}
            dabench("sync", "--tracking-uri", uri, "--outbox", str(folder / "mlruns-outbox"), cwd=folder, env=env)
            dabench("doctor", "--uri", uri, "--storage", storage, cwd=folder, env=env)
            result = counts(name, storage, uri)
        finally:
            kill_group(server)
    say(f"soak took {time.monotonic() - started:.0f} s")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--outage", type=int, default=4, help="counted trials while the server is down (default 4)")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (logs, outbox)")
    args = parser.parse_args()
    reason = why_no_postgres()
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = soak(args.trials, args.workers, args.outage, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="dabench-soak-") as tmp:
            result = soak(args.trials, args.workers, args.outage, Path(tmp))
    print(" ".join(f"{k}={v}" for k, v in result.items()), flush=True)
    expected = {"trials_counted": args.trials, "duplicates": 0, "parents": 1, "running": 0, "missing_records": 0}
    return 0 if result == expected else 1


if __name__ == "__main__":
    sys.exit(main())
