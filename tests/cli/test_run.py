"""`python -m dabench` end to end, as a user runs it, against a temp MLflow store."""

import json
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import QUIET_UNSET, ROOT, noise

FAST = ["run.warmup_steps=1", "run.timed_steps=3"]
REQUIRED_METRICS = (
    "throughput.samples_per_s",
    "throughput.tokens_per_s",
    "tier1.allocation_ratio",
    "tier1.load_imbalance",
    "tier1.compute_efficiency",
    "step_time.median_s",
    "step_time.p10_s",
    "step_time.p90_s",
    "perf.achieved_tflops",
)


def runs(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("dabench")
    if experiment is None:
        return client, []
    return client, client.search_runs([experiment.experiment_id])


@pytest.mark.slow
def test_default_run_records_one_ok_measured_run_with_metrics_tags_and_artifacts(tmp_path, run_cli):
    done = run_cli(*FAST, unset=QUIET_UNSET, fresh=True)  # import-time noise: a new process
    assert "dabench: ok | measure" in done.stdout
    assert noise(done.stderr) == [], done.stderr  # quiet by default (tests/runtime/test_quiet.py: -v)
    client, found = runs(tmp_path)
    assert len(found) == 1
    run = found[0]
    assert run.data.tags["dabench.mode"] == "measure"
    assert run.data.tags["dabench.status"] == "ok"
    assert run.data.tags["dabench.hardware"] == "cpu"
    assert run.data.tags["dabench.torch_version"].startswith("2.")
    assert "dabench.git_commit" in run.data.tags
    for name in REQUIRED_METRICS:
        assert run.data.metrics[name] > 0, name
    assert run.data.params["model.name"] == "tiny"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "result.json", "roofline.svg", "subtasks.csv"} <= artifacts
    result = json.loads(open(client.download_artifacts(run.info.run_id, "result.json", str(tmp_path))).read())
    assert result["status"] == "ok" and result["profile"]["mode"] == "measure"
    assert len(result["profile"]["step_times_s"]) == 3


@pytest.mark.slow
def test_multirun_records_a_parent_and_one_child_per_job(tmp_path, run_cli):
    run_cli("-m", "model.n_layers=1,2", *FAST, "run.profile_subtasks=false")
    _, found = runs(tmp_path)
    parents = [r for r in found if r.data.tags.get("dabench.parent") == "true"]
    assert len(parents) == 1
    children = [r for r in found if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert sorted(r.data.params["model.n_layers"] for r in children) == ["1", "2"]
    assert parents[0].data.metrics["jobs.total"] == 2 and parents[0].data.metrics["jobs.ok"] == 2


@pytest.mark.slow
def test_bad_input_exits_nonzero_with_a_clear_message_and_records_nothing(tmp_path, run_cli):
    done = run_cli("model.hidden_size=100", "model.n_heads=3", code=2)
    assert "model.hidden_size=100" in done.stderr and "n_heads=3" in done.stderr
    _, found = runs(tmp_path)
    assert not [r for r in found if r.data.tags.get("dabench.status") == "ok"]


@pytest.mark.slow
def test_tracking_can_be_switched_off(tmp_path, run_cli):
    run_cli(*FAST, "tracking.enabled=false", "run.profile_subtasks=false")
    assert not (tmp_path / "mlflow.db").exists()
    results = list(tmp_path.glob("outputs/*/*/artifacts/result.json"))
    assert len(results) == 1 and json.loads(results[0].read_text())["status"] == "ok"


def test_help_does_not_import_torch_or_mlflow(tmp_path):
    code = (
        "import sys; sys.argv=['dabench','--help']\n"
        "try:\n import dabench.__main__ as m; m.main()\nexcept SystemExit: pass\n"
        "print('torch' in sys.modules, 'mlflow' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "False False", done.stdout[-2000:] + done.stderr[-2000:]
