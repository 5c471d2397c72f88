"""Predict-mode sweeps against the speed of their parts, measured side by side in one run.

Prints, on this machine and under its current load (``/proc/loadavg`` is printed with each
measurement):

1. ``model``: full predictions per second of the analytical models in-process
   (:func:`dabench.predictor.predict` over benchmarks/perfmodel_speed.py's varied
   configurations): the floor of any predict sweep.
2. ``mlflow floor``: MLflow's own speed: a loop that only creates, logs and closes runs through
   the public ``MlflowClient`` API (``create_run``, one ``log_batch`` with the params, metrics
   and tags a real predicted run records, ``set_terminated``), on a SQLite store in a temp
   folder: the floor of any sweep that records one run per configuration.
3. ``hydra``: ``python -m dabench hardware=ipu parallel=pp -m`` (the 26-configuration default
   IPU study, Hydra's basic launcher, tracking on) in a temp launch dir whose SQLite store was
   created beforehand (MLflow's one-off schema creation is not a sweep's cost); runs/s = jobs /
   wall time of the whole command (process start, imports and the parent run included). A
   second, instrumented run of the same multirun times Hydra's composition inside it: the share
   of each job's time spent composing its config, and how many compositions there were (one per
   job, plus one per *shape* for the sweeper's check; Hydra's own sweeper composed every job
   twice; dabench's sweeper hands the launcher a caching loader, so Hydra composes in full only
   the first job of each shape, printed as "full composition"). The same multirun with
   ``hydra/launcher=dabench_inprocess`` (jobs run by the
   in-process grid) is printed beside it.
4. ``in-process``: a 1,000-configuration predict grid through :func:`dabench.pipeline.grid.run_grid`
   (what ``python -m dabench grid`` runs), logged to MLflow (fresh SQLite store in a temp
   folder, created beforehand), runs/s = configurations / time of ``run_grid`` (this process
   already imported mlflow, as the floor loop did). The grid runs in ``--chunks`` parts under
   one parent run, alternating with parts of the floor loop, so that both see the same load
   (other work on the machine comes and goes); CPU-seconds are printed too.

Ratios: in-process / mlflow floor (target >= 0.8), hydra / mlflow floor, hydra runs/s against
its target of 3; model configs/s against 2,000 (benchmarks/perfmodel_speed.py's target, which is
for a quiet core). The last line reads
``model_configs_per_s=<n> mlflow_floor_runs_per_s=<n> hydra_runs_per_s=<n> inprocess_runs_per_s=<n>``.

    python benchmarks/sweep_speed.py [--grid 1000] [--floor-runs 300] [--chunks 10] [--skip-hydra]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: the in-process grid: hidden x layers x batch x precision x layout on predicted CUDA, 1,000
#: configurations (5 x 5 x 5 x 4 x 2); hidden sizes are multiples of gpt2_small's 12 heads
GRID = [
    "hardware=cuda",
    "hardware.mode=predict",
    "model=gpt2_small",
    "model.hidden_size=768,1536,2304,3072,3840",
    "model.n_layers=6,12,18,24,36",
    "run.batch_size=1,2,4,8,16",
    "precision=fp32,fp16,bf16,mixed",
    "parallel=none,dp",
]
HYDRA_ARGS = ["hardware=ipu", "parallel=pp", "-m"]

#: run inside the instrumented multirun: Hydra's composition and each job timed, then the Hydra
#: entry point run as `python -m dabench` runs it
_TIMED = r"""
import atexit, json, runpy, sys, time
from dabench.runtime.hydra_compat import ConfigLoaderImpl
from hydra.core import utils as core_utils
from hydra.plugins.sweeper import Sweeper
totals = {"compose_s": 0.0, "compose_calls": 0, "check_s": 0.0, "check_calls": 0, "job_s": 0.0, "jobs": 0,
          "full_s": 0.0, "full_calls": 0}
def timer(function, seconds, calls):
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return function(*a, **k)
        finally:
            totals[seconds] += time.perf_counter() - t
            totals[calls] += 1
    return timed
ConfigLoaderImpl.load_sweep_config = timer(ConfigLoaderImpl.load_sweep_config, "full_s", "full_calls")
from hydra.core.plugins import Plugins
_instantiate_launcher = Plugins.instantiate_launcher
def instantiate_launcher(self, *a, hydra_context, **k):
    # dabench's basic sweeper hands the launcher (and its own check) a caching loader: each of its
    # calls is a job's composition; Hydra composes in full only the first job of each shape
    loader = hydra_context.config_loader
    if not isinstance(loader, ConfigLoaderImpl):
        loader.load_sweep_config = timer(loader.load_sweep_config, "compose_s", "compose_calls")
    return _instantiate_launcher(self, *a, hydra_context=hydra_context, **k)
Plugins.instantiate_launcher = instantiate_launcher
def save():
    if not totals["compose_calls"]:  # Hydra's own loader: every composition is a full one
        totals["compose_s"], totals["compose_calls"] = totals["full_s"], totals["full_calls"]
    open(out, "w").write(json.dumps(totals))
Sweeper.validate_batch_is_legal = timer(Sweeper.validate_batch_is_legal, "check_s", "check_calls")
# patched where it is defined: Hydra's plugin scan re-executes basic_launcher, which imports it then
core_utils.run_job = timer(core_utils.run_job, "job_s", "jobs")
out = sys.argv.pop(1)
atexit.register(save)
sys.argv[0] = "dabench"
runpy.run_module("dabench", run_name="__main__", alter_sys=True)
"""


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__().replace("'", "")
    except OSError:
        return "n/a"


def model_configs() -> tuple[list, str]:
    """(RunConfigs, which): benchmarks/perfmodel_speed.py's varied configurations; when they
    cannot be built (the script broken by a config change), the first 200 of the in-process grid."""
    try:
        from perfmodel_speed import configs

        return configs(), "perfmodel_speed.py's configurations"
    except Exception as error:  # say so, and measure on the grid's configurations instead
        from dabench.pipeline.grid import Composer, expand
        from dabench.pipeline.job import prepare

        composer = Composer()
        rcs = [prepare(composer.compose(job)).rc for job in expand(GRID)[:200]]
        return rcs, f"the grid's first 200 configurations (perfmodel_speed.configs() failed: {error})"


def model_speed(seconds: float) -> tuple[float, str]:
    """Predictions/s of the analytical models (ceilings cached, as perfmodel_speed.py does)."""
    from dabench.core.status import DabenchError
    from dabench.host.ceilings import resolve_ceilings
    from dabench.predictor import predict

    rcs, which = model_configs()
    ceilings = {id(rc): resolve_ceilings(rc.hardware, rc.precision) for rc in rcs}

    def one(rc) -> None:
        try:
            predict(rc, ceilings=ceilings[id(rc)])
        except DabenchError:
            pass

    for rc in rcs:
        one(rc)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for rc in rcs:
            one(rc)
        done += len(rcs)
    return done / (time.perf_counter() - start), which


def fresh_store(folder: Path, experiment: str) -> tuple[str, object, str]:
    """A SQLite store in ``folder`` with ``experiment`` created (schema creation not timed)."""
    from dabench.tracking.store import client_and_experiment

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client, experiment_id = client_and_experiment(uri, experiment)
    return uri, client, experiment_id


def payload() -> tuple[dict, dict, dict]:
    """The params, metrics and tags a real predicted run records (dabench.pipeline.record.run_record)."""
    from dabench import api
    from dabench.pipeline.job import execute_job, prepare
    from dabench.pipeline.record import run_record
    from dabench.tracking.lifecycle import standard_tags

    job = prepare(api.compose(GRID[:3] + ["model.n_layers=12"]))
    record = run_record(execute_job(job), job.container)
    return record.params, record.metrics, {**standard_tags(None), **record.tags}


class Floor:
    """MLflow's floor: create_run + log_batch + set_terminated through the public MlflowClient
    API, run in chunks (:meth:`chunk`) between the grid's, so both see the same load."""

    def __init__(self, folder: Path):
        from mlflow.tracking import MlflowClient

        uri, _, self.experiment_id = fresh_store(folder, "floor")
        self.client = MlflowClient(tracking_uri=uri)
        self.params, self.metrics, self.tags = payload()
        self.runs, self.wall, self.cpu = 0, 0.0, 0.0

    def chunk(self, runs: int) -> None:
        from mlflow.entities import Metric, Param, RunTag

        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(runs):
            now = int(time.time() * 1000)
            run = self.client.create_run(self.experiment_id, start_time=now, run_name=f"floor {self.runs + i}")
            self.client.log_batch(
                run.info.run_id,
                metrics=[Metric(k, float(v), now, 0) for k, v in self.metrics.items()],
                params=[Param(k, str(v)[:6000]) for k, v in list(self.params.items())[:100]],
                tags=[RunTag(k, str(v)[:5000]) for k, v in self.tags.items()],
            )
            self.client.set_terminated(run.info.run_id, "FINISHED", end_time=int(time.time() * 1000))
        self.runs += runs
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu


def inprocess(folder: Path, size: int, floor: Floor, chunks: int, floor_runs: int) -> dict:
    """A ``size``-configuration predict grid through dabench.pipeline.grid.run_grid, in ``chunks`` parts
    under one parent run (one Composer), each part followed by ``floor_runs`` of the floor loop."""
    from dabench.pipeline.grid import Composer, expand, run_grid
    from dabench.tracking.lifecycle import open_run

    uri, _, _ = fresh_store(folder, "grid")
    jobs = [[*job, f"tracking.uri={uri}", "tracking.experiment=grid"] for job in expand(GRID)[:size]]
    parent = open_run(experiment="grid", uri=uri, run_name="sweep_speed grid", standard=False)
    composer, runs = Composer(), []
    wall = cpu = 0.0
    step = -(-len(jobs) // chunks)
    for first in range(0, len(jobs), step):
        w, c = time.perf_counter(), time.process_time()
        runs += run_grid(jobs[first : first + step], parent_run_id=parent.run_id, composer=composer)
        wall += time.perf_counter() - w
        cpu += time.process_time() - c
        floor.chunk(floor_runs)
    parent.close("ok")
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.result.status.value] = counts.get(r.result.status.value, 0) + 1
    assert all(r.run_id for r in runs), "every configuration recorded"
    return {"runs": len(runs), "wall": wall, "cpu": cpu, "counts": counts}


def hydra_multirun(folder: Path, timed: bool, extra: tuple[str, ...] = ()) -> tuple[float, int, dict | None, float]:
    """(runs/s, jobs, composition totals when ``timed``, CPU seconds of the command) of
    ``python -m dabench hardware=ipu parallel=pp -m`` in ``folder`` (its store created first)."""
    from mlflow.tracking import MlflowClient

    uri, _, _ = fresh_store(folder / "mlruns", "dabench")
    env = {k: v for k, v in os.environ.items() if k not in ("DABENCH_PARENT_RUN_ID",)}
    env["MLFLOW_TRACKING_URI"] = uri
    totals_file = folder / "timed.json"
    args = [*HYDRA_ARGS[:-1], *extra, HYDRA_ARGS[-1]]
    command = (
        [sys.executable, "-c", _TIMED, str(totals_file), *args] if timed else [sys.executable, "-m", "dabench", *args]
    )
    import resource

    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} exited {done.returncode}: {done.stderr[-2000:]}")
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("dabench")
    children = [
        r
        for r in client.search_runs([experiment.experiment_id], max_results=10000)
        if r.data.tags.get("dabench.parent") != "true"
    ]
    totals = json.loads(totals_file.read_text()) if timed and totals_file.exists() else None
    return len(children) / elapsed, len(children), totals, cpu_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=1000, help="configurations in the in-process grid (<= 1000)")
    parser.add_argument("--floor-runs", type=int, default=300, help="runs in the MLflow floor loop")
    parser.add_argument("--chunks", type=int, default=10, help="parts the grid and the floor loop alternate in")
    parser.add_argument("--model-seconds", type=float, default=3.0)
    parser.add_argument("--skip-hydra", action="store_true", help="leave out the two Hydra multiruns")
    args = parser.parse_args()
    os.environ.pop("DABENCH_PARENT_RUN_ID", None)
    print(f"machine: {os.cpu_count()} cores; load at start {load()}", flush=True)

    model, which = model_speed(args.model_seconds)
    print(
        f"model: {model:,.0f} configs/s on {which} (target >= 2,000 on a quiet core: {model / 2000:.2f}x) "
        f"| load {load()}",
        flush=True,
    )

    with tempfile.TemporaryDirectory(prefix="sweep_speed_") as tmp:
        tmp = Path(tmp)
        for name in ("floor", "grid", "hydra", "hydra_timed"):
            (tmp / name).mkdir()
        floor_chunk = max(1, args.floor_runs // args.chunks)
        floor = Floor(tmp / "floor")
        floor.chunk(floor_chunk)  # first chunk before the grid, the others after each grid part
        grid_run = inprocess(tmp / "grid", args.grid, floor, args.chunks, floor_chunk)
        floor_rate, grid = floor.runs / floor.wall, grid_run["runs"] / grid_run["wall"]
        print(
            f"mlflow floor: {floor_rate:.1f} runs/s ({1000 / floor_rate:.0f} ms/run; {floor.runs} runs: create_run + "
            f"log_batch + set_terminated, SQLite in a temp folder; {floor.runs / floor.cpu:.1f} runs per CPU-second) "
            f"| load {load()}",
            flush=True,
        )
        print(
            f"in-process grid: {grid:.1f} runs/s ({grid_run['runs']} configurations {grid_run['counts']}; "
            f"{grid_run['runs'] / grid_run['cpu']:.1f} runs per CPU-second); {grid / floor_rate:.2f} of the mlflow "
            f"floor (target >= 0.8; the two interleaved in {args.chunks} parts) | load {load()}",
            flush=True,
        )
        floor = floor_rate

        hydra = float("nan")
        if not args.skip_hydra:
            hydra, jobs, _, cpu_s = hydra_multirun(tmp / "hydra", timed=False)
            print(
                f"hydra -m: {hydra:.2f} runs/s ({jobs} jobs, whole command: python -m dabench "
                f"{' '.join(HYDRA_ARGS)}; {cpu_s:.1f} CPU-seconds = {jobs / cpu_s:.2f} runs per CPU-second, "
                f"what one idle core would give); {hydra / floor:.2f} of the mlflow floor; target >= 3 runs/s: "
                f"{hydra / 3:.2f}x | load {load()}",
                flush=True,
            )
            (tmp / "hydra_inprocess").mkdir()
            fast, jobs, _, cpu_s = hydra_multirun(
                tmp / "hydra_inprocess", timed=False, extra=("hydra/launcher=dabench_inprocess",)
            )
            print(
                f"hydra -m with hydra/launcher=dabench_inprocess: {fast:.2f} runs/s ({jobs} jobs, whole command; "
                f"{cpu_s:.1f} CPU-seconds) | load {load()}",
                flush=True,
            )
            _, _, totals, _ = hydra_multirun(tmp / "hydra_timed", timed=True)
            if totals and totals["jobs"]:
                # the launcher composes each job before running it; the sweeper's check composes too
                launcher_compose = totals["compose_s"] - totals["check_s"]
                per_job = (totals["job_s"] + launcher_compose) / totals["jobs"]
                share = launcher_compose / totals["jobs"] / per_job
                print(
                    f"hydra composition: {totals['compose_calls']} compositions for {totals['jobs']} jobs "
                    f"(Hydra's full composition {totals['full_calls']} of them, {totals['full_s']:.2f} s) "
                    f"({totals['compose_s'] / totals['compose_calls'] * 1000:.0f} ms each; the sweeper's check "
                    f"{totals['check_s']:.2f} s); composing takes {share:.0%} of each job's time "
                    f"({per_job * 1000:.0f} ms per job incl. its composition; instrumented rerun) | load {load()}",
                    flush=True,
                )
    print(
        f"model_configs_per_s={model:.0f} mlflow_floor_runs_per_s={floor:.1f} hydra_runs_per_s={hydra:.2f} "
        f"inprocess_runs_per_s={grid:.1f}"
    )


if __name__ == "__main__":
    main()
