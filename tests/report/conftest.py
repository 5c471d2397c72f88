"""A real MLflow store for the report tests, built once per session by `python -m dabench`:

- wse2 (PREDICTED): 2 and 200 layers x hidden 384, 768 (the 200-layer runs fail on capacity);
- ipu pp (PREDICTED): three placements on 2 and 4 IPUs ("0 10" fails on capacity);
- rdu (PREDICTED): bf16 and mixed x batch 8 and 16 (the precision and batch studies);
- cuda (PREDICTED): dp and tp on 1 and 2 GPUs (scaling);
- a small Optuna study (ipu_deploy, 2 trials) and a tiny measured CPU run;
- runs as an older dabench wrote them, in experiment "old-dabench": params and one metric, no
  dabench.* tags (one finished, one failed), logged with MlflowClient.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_dabench

COMMANDS = [
    ["hardware=wse2", "model=gpt2_test", "model.n_layers=2,200", "model.hidden_size=384,768", "-m"],
    ["hardware=ipu", "parallel=pp", 'parallel.placement="0 4","0 2 1 1","0 10"', "-m"],
    [
        "hardware=rdu",
        "model=gpt2_test",
        "model.n_layers=1",
        "model.hidden_size=768",
        "precision=bf16,mixed",
        "run.batch_size=8,16",
        "hardware.options.compile_mode=o1",
        "-m",
    ],
    ["hardware=cuda", "hardware.mode=predict", "parallel=dp,tp", "parallel.degree=1,2", "-m"],
    ["+sweeps=ipu_deploy", "model=tiny", "model.n_layers=4", "hydra.sweeper.n_trials=2", "-m"],
    ["hardware=cpu", "hardware.mode=measure", "run.warmup_steps=1", "run.timed_steps=2", "run.batch_size=2"],
]


@dataclass(frozen=True)
class Store:
    folder: Path
    uri: str
    wse2_parent: str  #: the wse2 multirun's parent run id
    study: str  #: the Optuna study's name


def _old_runs(uri: str) -> None:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.create_experiment("old-dabench")
    done = client.create_run(experiment, run_name="old tiny L2")
    client.log_batch(
        done.info.run_id,
        metrics=[Metric("throughput.samples_per_s", 123.0, 0, 0)],
        params=[Param("model.n_layers", "2"), Param("hardware.name", "cpu")],
    )
    client.set_terminated(done.info.run_id, "FINISHED")
    failed = client.create_run(experiment, run_name="old crashed run")
    client.set_terminated(failed.info.run_id, "FAILED")


@pytest.fixture(scope="session")
def report_store(tmp_path_factory) -> Store:
    folder = tmp_path_factory.mktemp("report_store")
    env = cli_env(folder)
    for command in COMMANDS:
        run_dabench(*command, cwd=folder, timeout=400)
    uri = env["MLFLOW_TRACKING_URI"]
    _old_runs(uri)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("dabench").experiment_id
    parents = client.search_runs([experiment], "tags.`dabench.parent` = 'true'", max_results=100)
    wse2 = next(p for p in parents if "hardware=wse2" in p.data.params.get("multirun.overrides", ""))
    study = next(p.data.tags["optuna.study"] for p in parents if p.data.tags.get("optuna.study"))
    return Store(folder, uri, wse2.info.run_id, study)
