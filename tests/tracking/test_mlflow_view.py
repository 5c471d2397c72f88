"""MLflow that reads well: the experiment opens in the classic view, runs carry real start and end
times, a description (summary + reproduce command, credentials masked), system metrics when
measured (none when predicted)."""

import shlex
import sys
import time

from mlflow.tracking import MlflowClient

from dabench import api
from dabench.tracking.describe import reproduce_command, run_note
from dabench.tracking.lifecycle import recorded_run
from dabench.tracking.store import EXPERIMENT_KIND, EXPERIMENT_KIND_TAG, client_and_experiment


def test_experiments_are_created_and_upgraded_with_the_classic_view_kind(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client, experiment_id = client_and_experiment(uri, "dabench")
    assert (
        client.get_experiment(experiment_id).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND == "custom_model_development"
    )
    plain = MlflowClient(uri)
    old = plain.create_experiment("made-by-an-older-dabench")  # no kind: MLflow 3 shows it as GenAI
    assert EXPERIMENT_KIND_TAG not in plain.get_experiment(old).tags
    client_and_experiment(uri, "made-by-an-older-dabench")
    assert plain.get_experiment(old).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND


def test_a_recorded_run_lasts_as_long_as_its_work(tmp_path):
    before = int(time.time() * 1000)
    with recorded_run(experiment="dabench", uri=f"sqlite:///{tmp_path / 'mlflow.db'}", run_name="r") as run:
        time.sleep(0.6)
    info = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_run(run.run_id).info
    assert info.start_time >= before - 1000
    assert info.end_time - info.start_time >= 600


def test_the_reproduce_command_is_this_interpreter_with_quoted_overrides_and_no_credentials():
    command = reproduce_command(
        [
            "model=gpt2_small",
            "tracking.uri=postgresql://me:hunter2@db/mlflow",
            "tracking.tags.api_token=abc123",
            'parallel.placement="0 4"',
        ]
    )
    words = shlex.split(command)
    assert words[:3] == [sys.executable, "-m", "dabench"]
    assert words[3] == "model=gpt2_small"
    assert "hunter2" not in command and "abc123" not in command
    assert words[6] == 'parallel.placement="0 4"'
    assert reproduce_command(["a=1"], multirun=True).endswith(" a=1 -m")
    note = run_note("dabench: ok | measure | tiny", command)
    assert note.splitlines()[0] == "dabench: ok | measure | tiny" and "Reproduce:" in note


def _runs(uri, experiment):
    client = MlflowClient(uri)
    return client, client.search_runs([client.get_experiment_by_name(experiment).experiment_id])


def test_a_measured_run_has_system_metrics_and_a_description_and_a_predicted_run_no_system_metrics(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    common = [f"tracking.uri={uri}", "tracking.system_metrics_interval_s=1"]
    measured = api.run(
        [
            "run.warmup_steps=1",
            "run.timed_steps=2",
            "run.profile_subtasks=false",
            "tracking.experiment=measured",
            *common,
        ],
        record=True,
    )
    assert measured.status.value == "ok" and measured.mode == "measure"
    predicted = api.run(
        ["hardware=ipu", "hardware.mode=predict", "tracking.experiment=predicted", *common], record=True
    )
    assert predicted.status.value == "ok"
    _, (m,) = _runs(uri, "measured")
    system = {k for k in m.data.metrics if k.startswith("system/")}
    assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= system
    timed_ms = 1000 * m.data.metrics["step_time.median_s"] * 2  # the run's span holds its timed window at least
    assert m.info.end_time - m.info.start_time >= timed_ms > 0
    note = m.data.tags["mlflow.note.content"]
    assert note.startswith("dabench: ok | measure | tiny") and f"{sys.executable} -m dabench run.warmup_steps=1" in note
    _, (p,) = _runs(uri, "predicted")
    assert not [k for k in p.data.metrics if k.startswith("system/")]
    assert p.data.tags["mlflow.note.content"].startswith("dabench: ok | PREDICTED")
    assert p.data.tags["dabench.mode"] == "predict" and m.data.tags["dabench.mode"] == "measure"
