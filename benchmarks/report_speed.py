"""How long `python -m dabench report` takes: the frame read and the report (figures, HTML, CSV).

Two modes:

- ``--source URI [--runs N]``: copies the runs of a real store until a temp store holds N runs
  (default 2000), each copy a new MLflow run with the same params, metrics and tags (one
  log_batch each), then times ``load_frame`` (one paginated search) and ``write_report`` once.
  Prints seconds per 1000 runs and, last, ``report_s_per_1000_runs=<N>``.
- ``--store URI [--baseline REV] [--rounds R] [--repeat K]``: times ``write_report`` on that
  store as it is, in fresh worker processes (``R`` rounds, each: one worker of this tree and,
  with ``--baseline``, one of git revision REV's ``dabench/`` unpacked by ``git archive``, in
  alternating order). Each worker reads the frame, times its first ``write_report`` (what one
  CLI call pays: fonts and caches cold) and then ``K`` more (warm). Prints the median and the
  min..max of both, per tree, and the ratio of the medians; the load average beside them.

    python benchmarks/report_speed.py --source sqlite:////abs/mlflow.db [--runs 2000]
    python benchmarks/report_speed.py --store sqlite:////abs/mlflow.db --baseline HEAD~1

A store to time: the sweeps of tests/report/conftest.py (docs/report.md, "Speed").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORKER = """
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from dabench.report.frame import load_frame
from dabench.report.html import write_report
uri, repeat = sys.argv[2], int(sys.argv[3])
frame, selection = load_frame(uri, None)
times = []
with tempfile.TemporaryDirectory() as out:
    for i in range(repeat + 1):
        start = time.perf_counter()
        write_report(frame, Path(out) / str(i), selection.label, uri)
        times.append(time.perf_counter() - start)
print(json.dumps({"runs": len(frame), "times": times}))
"""


def _copy_store(source_uri: str, n: int) -> None:
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    from dabench.report.frame import load_frame
    from dabench.report.html import write_report

    source = MlflowClient(source_uri)
    experiments = [e.experiment_id for e in source.search_experiments()]
    runs = [r for r in source.search_runs(experiments, max_results=5000) if r.data.tags.get("dabench.parent") != "true"]
    if not runs:
        raise SystemExit(f"no runs in {source_uri}")
    folder = Path(tempfile.mkdtemp(prefix="report_speed_"))
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    target = MlflowClient(uri)
    experiment = target.create_experiment("speed", artifact_location=(folder / "artifacts").as_uri())
    start = time.perf_counter()
    for i in range(n):
        run = runs[i % len(runs)]
        new = target.create_run(experiment, run_name=run.info.run_name)
        target.log_batch(
            new.info.run_id,
            metrics=[Metric(k, v, 0, 0) for k, v in run.data.metrics.items()],
            params=[Param(k, v[:6000]) for k, v in run.data.params.items()],
            tags=[RunTag(k, v) for k, v in run.data.tags.items() if not k.startswith("mlflow.")],
        )
        target.set_terminated(new.info.run_id, run.info.status)
    print(f"store: {n} runs copied from {len(runs)} in {time.perf_counter() - start:.1f} s -> {uri}")
    load = os.getloadavg()[0]
    start = time.perf_counter()
    frame, _ = load_frame(uri, "speed", client=target)
    read = time.perf_counter() - start
    start = time.perf_counter()
    write_report(frame, folder / "report", "speed", uri)
    written = time.perf_counter() - start
    per = 1000 / len(frame)
    print(
        f"load_frame: {read:.2f} s ({read * per:.2f} s per 1000 runs); write_report: {written:.2f} s "
        f"({written * per:.2f} s per 1000 runs); load average {load:.2f} on {os.cpu_count()} cores"
    )
    print(f"report_s_per_1000_runs={(read + written) * per:.2f}")


def _unpack(revision: str, into: Path) -> Path:
    """``dabench/`` of git ``revision`` under ``into`` (the working tree is left alone)."""
    archive = into / "baseline.tar"
    subprocess.run(["git", "archive", "-o", str(archive), revision, "dabench"], cwd=ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def _worker(tree: Path, uri: str, repeat: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(tree), uri, str(repeat)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _summary(times: list[float]) -> str:
    return f"median {statistics.median(times):6.2f} s  (min {min(times):.2f}, max {max(times):.2f}, n={len(times)})"


def _time_store(uri: str, baseline: str | None, rounds: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT}
        if baseline:
            trees = {f"baseline {baseline}": _unpack(baseline, Path(tmp)), **trees}
        first: dict[str, list[float]] = {name: [] for name in trees}
        warm: dict[str, list[float]] = {name: [] for name in trees}
        loads, runs = [], 0
        for r in range(rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))  # alternate: drift hits both alike
            for name in order:
                loads.append(os.getloadavg()[0])
                result = _worker(trees[name], uri, repeat)
                runs = result["runs"]
                first[name].append(result["times"][0])
                warm[name] += result["times"][1:]
                print(f"round {r + 1} {name}: " + " ".join(f"{t:.2f}" for t in result["times"]), flush=True)
    load = f"load average {min(loads):.2f}..{max(loads):.2f}, {os.cpu_count()} cores"
    print(f"\nwrite_report on {runs} runs ({uri}); {load}")
    for name in trees:
        print(f"{name:>20} first call: {_summary(first[name])}")
        print(f"{name:>20} warm:       {_summary(warm[name])}")
    if baseline:
        old, new = list(trees)
        for what, data in (("first call", first), ("warm", warm)):
            ratio = statistics.median(data[new]) / statistics.median(data[old])
            print(f"{what}: this tree / baseline = {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--source", help="MLflow URI of a store with dabench runs to copy (then time once)")
    source.add_argument("--store", help="MLflow URI of a store to time write_report on, as it is")
    parser.add_argument("--runs", type=int, default=2000, help="--source: runs in the copied store")
    parser.add_argument("--baseline", default=None, help="--store: a git revision to time beside this tree")
    parser.add_argument("--rounds", type=int, default=3, help="--store: worker processes per tree")
    parser.add_argument("--repeat", type=int, default=2, help="--store: warm write_report calls per worker")
    args = parser.parse_args()
    if args.source:
        _copy_store(args.source, args.runs)
    else:
        _time_store(args.store, args.baseline, args.rounds, args.repeat)


if __name__ == "__main__":
    main()
