"""Every sweep ends with a results table (ok runs best throughput first, status counts) and a
results.csv in its folder and on its parent run: -m multirun, Optuna study, python -m dabench.pipeline.grid."""

import csv

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from dabench.report.frame import normalize
from dabench.report.results import render_results, results_table, status_counts, sweep_mode, write_results_csv
from tests.conftest import run_dabench


def _frame():
    rows = [
        {
            "run_id": "a" * 32,
            "run_name": "slow",
            "mlflow_status": "FINISHED",
            "tags.dabench.status": "ok",
            "tags.dabench.mode": "predict",
            "metrics.throughput.samples_per_s": 10.0,
            "metrics.step_time.median_s": 0.4,
        },
        {
            "run_id": "b" * 32,
            "run_name": "too big",
            "mlflow_status": "FINISHED",
            "tags.dabench.status": "capacity",
            "tags.dabench.mode": "predict",
            "tags.dabench.reason": "SRAM capacity exceeded",
        },
        {
            "run_id": "c" * 32,
            "run_name": "fast",
            "mlflow_status": "FINISHED",
            "tags.dabench.status": "ok",
            "tags.dabench.mode": "predict",
            "metrics.throughput.samples_per_s": 30.0,
            "metrics.step_time.median_s": 0.1,
        },
    ]
    return normalize(pd.DataFrame(rows))


def test_ok_runs_come_first_best_throughput_first_then_failures():
    table = results_table(_frame())
    assert list(table["run_name"]) == ["fast", "slow", "too big"]
    assert list(table["status"]) == ["ok", "ok", "capacity"]
    assert table["step_ms"].iloc[0] == pytest.approx(100.0)
    assert status_counts(_frame()) == {"ok": 2, "capacity": 1}
    assert sweep_mode(_frame()) == "predict"


def test_rendered_table_has_a_header_counts_and_the_failure_reason():
    text = render_results(_frame(), "multirun results")
    lines = text.splitlines()
    assert lines[0] == "multirun results: 3 runs (2 ok, 1 capacity)"
    assert lines[1].split()[:3] == ["run", "status", "mode"]
    assert lines[3].startswith("fast") and "30.00" in lines[3]
    assert "SRAM capacity exceeded" in lines[5]


def test_results_csv_holds_every_run_in_table_order(tmp_path):
    path = write_results_csv(_frame(), tmp_path / "results.csv")
    rows = list(csv.DictReader(path.open()))
    assert [r["run_name"] for r in rows] == ["fast", "slow", "too big"]
    assert "metrics.throughput.samples_per_s" in rows[0]


def _run(tmp_path, *args, timeout=300):
    """``dabench <args>`` in ``tmp_path`` with its own MLflow store; it must exit 0."""
    done = run_dabench(*args, cwd=tmp_path, timeout=timeout, unset=("DABENCH_PROGRESS",))
    return done


def _parent(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("dabench")
    parents = [r for r in client.search_runs([experiment.experiment_id]) if r.data.tags.get("dabench.parent") == "true"]
    assert len(parents) == 1
    return client, parents[0]


def _results_csv_on_disk_and_parent(tmp_path, pattern="multirun/*/*/results.csv"):
    """The one results.csv under ``tmp_path`` matching ``pattern``, and the sweep's parent run,
    which must hold results.csv as an artifact too."""
    found = list(tmp_path.glob(pattern))
    assert len(found) == 1
    client, parent = _parent(tmp_path)
    assert "results.csv" in {a.path for a in client.list_artifacts(parent.info.run_id)}
    return found[0], parent


@pytest.mark.slow
def test_a_multirun_prints_progress_and_its_table_and_writes_results_csv_on_disk_and_on_the_parent(tmp_path):
    done = _run(
        tmp_path, "-m", "hardware=wse2", "hardware.mode=predict", "model.n_layers=2,100", "model.hidden_size=1536"
    )
    assert "multirun: 1/2 runs done" in done.stderr and "multirun: 2/2 runs done (1 ok, 1 failed)" in done.stderr
    table = done.stdout[done.stdout.index("multirun results: 2 runs (1 ok, 1 capacity)") :].splitlines()
    assert table[3].split()[0] == "gpt2_small" and " ok " in table[3] and " capacity " in table[4]
    path, parent = _results_csv_on_disk_and_parent(tmp_path)
    rows = list(csv.DictReader(path.open()))
    assert [r["status"] for r in rows] == ["ok", "capacity"]
    assert parent.data.tags["dabench.mode"] == "predict"


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, progress, header, pattern",
    [
        (
            ["dabench", "+sweeps=ipu_deploy", "hydra.sweeper.n_trials=2", "-m"],
            "study: 2/2 trials done",
            "study ipu_deploy-gpt2_test results: 2 runs",
            "multirun/*/*/results.csv",
        ),
        (
            ["dabench", "grid", "hardware=ipu", "hardware.mode=predict", "model.n_layers=2,4"],
            "grid: 2/2 runs done (2 ok, 0 failed)",
            "grid results: 2 runs (2 ok)",
            "multirun/*/*-grid/results.csv",
        ),
    ],
    ids=["study", "grid"],
)
def test_a_study_and_a_grid_print_progress_and_their_table_and_put_results_csv_on_the_parent(
    tmp_path, args, progress, header, pattern
):
    done = _run(tmp_path, *args[1:])
    assert progress in done.stderr
    assert header in done.stdout
    _, parent = _results_csv_on_disk_and_parent(tmp_path, pattern)
    assert parent.data.tags["dabench.mode"] == "predict"


@pytest.mark.slow
def test_a_multirun_without_tracking_still_ends_with_its_table_and_results_csv(tmp_path):
    done = _run(
        tmp_path,
        "-m",
        "hardware=wse2",
        "hardware.mode=predict",
        "model.n_layers=2,100",
        "model.hidden_size=1536",
        "tracking.enabled=false",
    )
    assert "multirun results (not recorded: tracking.enabled=false): 2 runs (1 ok, 1 capacity)" in done.stdout
    (path,) = tmp_path.glob("multirun/*/*/results.csv")
    rows = list(csv.DictReader(path.open()))
    assert [r["status"] for r in rows] == ["ok", "capacity"] and "model.n_layers=2" in rows[0]["run_name"]
    assert float(rows[0]["step_ms"]) > 0 and float(rows[0]["li"]) > 0 and rows[0]["diagnosis"] and rows[0]["band"]
    assert not (tmp_path / "mlflow.db").exists()
