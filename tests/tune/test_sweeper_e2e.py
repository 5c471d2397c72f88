"""The Hydra sweeper end to end: `python -m dabench +sweeps=... -m` in a temp launch dir.

- a predicted IPU sweep, then the same command with a larger budget: the study resumes (trial
  numbers go on), one MLflow parent run holds every trial's child run and the study's result;
- a measured CPU sweep: real runs, and an invalid combination recorded as a failed trial.
"""

import math

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from tests.conftest import run_dabench

optuna.logging.set_verbosity(optuna.logging.WARNING)


def sweep(tmp_path, *args, timeout=180):
    done = run_dabench(*args, "-m", cwd=tmp_path, timeout=timeout)
    return done.stdout + done.stderr


def load(tmp_path, name):
    return optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}")


def runs(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("dabench").experiment_id
    return client, client.search_runs([experiment], max_results=1000)


def evaluated(study) -> list:
    """The trials the study launched: a sampler's repeat of a held deployment is a FAILED trial
    marked skipped (dabench/tune/dedup.py), never launched, not counted."""
    return [t for t in study.trials if t.user_attrs.get("dabench.status") != "skipped"]


@pytest.mark.slow
def test_ipu_sweep_resumes_into_one_parent_run(tmp_path):
    # tiny model: every IPU deployment fits, so the best is defined after a few trials
    args = ["+sweeps=ipu_deploy", "model=tiny", "model.n_layers=4"]
    out = sweep(tmp_path, *args, "hydra.sweeper.n_trials=3")
    assert "study ipu_deploy-tiny-" in out and "best: trial" in out and "PREDICTED" in out
    name = next(line.split()[1].rstrip(":") for line in out.splitlines() if line.startswith("study ipu_deploy"))
    assert len(evaluated(load(tmp_path, name))) == 3

    out = sweep(tmp_path, *args, "hydra.sweeper.n_trials=5")
    assert "3 of 5 trials done, running 2" in out
    study = load(tmp_path, name)
    done = evaluated(study)
    assert len(done) == 5
    assert all(t.state == TrialState.COMPLETE and t.user_attrs["dabench.mode"] == "predict" for t in done)

    client, all_runs = runs(tmp_path)
    parents = [r for r in all_runs if r.data.tags.get("dabench.parent") == "true"]
    assert len(parents) == 1, "the first invocation's parent was merged into the second's"
    parent = parents[0]
    children = [r for r in all_runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(int(r.data.tags["optuna_trial"]) for r in children) == [t.number for t in done]
    assert {r.data.tags["optuna_study"] for r in children} == {name}
    assert all("tier1.load_imbalance" in r.data.metrics and r.data.tags["dabench.mode"] == "predict" for r in children)
    assert parent.data.tags["optuna.study"] == name and parent.data.tags["dabench.parent_kind"] == "study"
    assert math.isclose(parent.data.metrics["best.samples_per_s"], study.best_value)
    assert parent.data.metrics["trials.complete"] == 5
    assert parent.data.tags["best.ipus"] == str(study.best_params["ipus"])
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id, "study")}
    assert {
        "study/optimization_history.png",
        "study/param_importance.png",
        "study/optimization_results.yaml",
        "study/trials.csv",
    } <= artifacts

    best = run_dabench("study", cwd=tmp_path, timeout=60)
    assert f"best: trial {study.best_trial.number}" in best.stdout
    assert "parallel.layers_per_stage=" in best.stdout and "hardware.mode=measure" in best.stdout


@pytest.mark.slow
def test_cpu_sweep_measures_and_records_invalid_trials(tmp_path):
    # command-line sweeps replace the sweep's own dimensions; a fixed value removes one
    out = sweep(
        tmp_path,
        "+sweeps=cpu_deploy",
        "model.n_layers=1",
        "run.warmup_steps=0",
        "run.timed_steps=1",
        "hydra.sweeper.n_trials=4",
        "run.batch_size=1,2",
        "precision=fp32",
        "run.threads=choice(0, 1)",
    )
    study = load(tmp_path, "cpu_deploy-tiny-" + out.split("study cpu_deploy-tiny-")[1].split()[0])
    by_threads = {0: [], 1: []}
    ran = [t for t in study.trials if t.user_attrs.get("dabench.status") != "skipped"]
    for trial in ran:
        by_threads[trial.params["run.threads"]].append(trial)
    # 4 points, 4 trials: a proposal that repeats one is closed as skipped, so all 4 run once
    assert len(ran) == 4 and len({tuple(sorted(t.params.items())) for t in ran}) == 4
    for trial in by_threads[0]:  # threads=0 is refused by validation: a failed trial, not an abort
        assert trial.state == TrialState.FAIL and trial.user_attrs["dabench.status"] == "invalid_config"
        assert "run.threads" in trial.user_attrs["dabench.reason"]
    for trial in by_threads[1]:  # real training steps on this CPU
        assert trial.state == TrialState.COMPLETE and trial.user_attrs["dabench.mode"] == "measure"
    _, all_runs = runs(tmp_path)
    children = [r for r in all_runs if "optuna_trial" in r.data.tags]
    assert len(children) == 4
    assert {r.data.tags["dabench.status"] for r in children} == {"ok", "invalid_config"}
