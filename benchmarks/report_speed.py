"""How long `python -m dabench report` takes as a store grows: the frame read and the report.

Copies the runs of a real store (default: the run stores of tests or a sweep, ``--source``)
until the target store holds N runs (``--runs``, default 2000), each copy a new MLflow run with
the same params, metrics and tags (logged with one log_batch each), then times
``load_frame`` (one paginated search) and ``write_report`` (figures, HTML, CSV). Prints seconds
per 1000 runs for both and, last, ``report_s_per_1000_runs=<N>``. Note the machine load
(/proc/loadavg) beside any figure you quote.

    python benchmarks/report_speed.py --source sqlite:////abs/mlflow.db [--runs 2000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, help="MLflow URI of a store with dabench runs to copy")
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    from dabench.report.frame import load_frame
    from dabench.report.html import write_report

    source = MlflowClient(args.source)
    experiments = [e.experiment_id for e in source.search_experiments()]
    runs = [r for r in source.search_runs(experiments, max_results=5000) if r.data.tags.get("dabench.parent") != "true"]
    if not runs:
        raise SystemExit(f"no runs in {args.source}")
    folder = Path(tempfile.mkdtemp(prefix="report_speed_"))
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    target = MlflowClient(uri)
    experiment = target.create_experiment("speed", artifact_location=(folder / "artifacts").as_uri())
    start = time.perf_counter()
    for i in range(args.runs):
        run = runs[i % len(runs)]
        new = target.create_run(experiment, run_name=run.info.run_name)
        target.log_batch(
            new.info.run_id,
            metrics=[Metric(k, v, 0, 0) for k, v in run.data.metrics.items()],
            params=[Param(k, v[:6000]) for k, v in run.data.params.items()],
            tags=[RunTag(k, v) for k, v in run.data.tags.items() if not k.startswith("mlflow.")],
        )
        target.set_terminated(new.info.run_id, run.info.status)
    print(f"store: {args.runs} runs copied from {len(runs)} in {time.perf_counter() - start:.1f} s -> {uri}")
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


if __name__ == "__main__":
    main()
