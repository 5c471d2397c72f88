"""``python -m dabench ingest PATH [--log]``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from vendor_helpers import FIXTURES, REPO, SHARED, requires_shared

from dabench.cli.ingest import main


@requires_shared
def test_compile_report_7_acceptance():
    done = subprocess.run(
        [sys.executable, "-m", "dabench", "ingest", "../shared/fixtures/cerebras/compile_reports/compile_report_7.txt"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["source"] == "cerebras_compile_report"
    assert out["metrics"]["throughput.samples_per_s"] == 5887.1
    assert out["metrics"]["tier1.allocation_ratio"] == pytest.approx(0.374, abs=0.002)
    assert out["bottleneck"] == "attention12"
    assert out["units"]["pes"] == {"allocated": 115259.0, "available": 307840.0}
    assert {"name", "rate", "units"} <= set(out["subtasks"][0]) and "tier1.load_imbalance" in out["metrics"]


@requires_shared
@pytest.mark.parametrize(
    "folder, source", [("cerebras/appliance_run", "cerebras_appliance_run"), ("sambanova/logreg", "sambaflow_compile")]
)
def test_real_folders_parse(capsys, folder, source):
    assert main([str(SHARED / folder)]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == source


def test_unknown_path_exits_2(capsys, tmp_path):
    assert main([str(tmp_path)]) == 2
    assert "no known vendor artifacts" in capsys.readouterr().err


@pytest.mark.slow
def test_log_records_a_measured_run_with_the_sources(capsys, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)
    assert main([str(FIXTURES / "sambaflow_small"), "--log"]) == 0
    out = json.loads(capsys.readouterr().out)
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(out["mlflow_run_id"])
    assert run.data.tags["dabench.mode"] == "measure" and run.data.tags["dabench.source"] == "sambaflow_compile"
    assert run.data.tags["dabench.bottleneck"] == "section1.stage0"
    assert run.data.metrics["tier1.load_imbalance"] == pytest.approx(600 / 700)
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert logged == {"profile.json", "vendor"}
    vendor = {a.path for a in client.list_artifacts(run.info.run_id, "vendor")}
    assert "vendor/small.s0.utilization_report.json" in vendor and "vendor/stage_buffers" in vendor


def _logged(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)
    return uri


def _runs(uri):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return client.search_runs([client.get_experiment_by_name("dabench").experiment_id])


@pytest.mark.slow
def test_a_half_cut_artifact_is_recorded_incomplete_and_exits_1(capsys, tmp_path, monkeypatch):
    uri = _logged(monkeypatch, tmp_path)
    lines = (FIXTURES / "compile_report_small.txt").read_text().splitlines(keepends=True)
    cut = tmp_path / "compile_report.txt"
    cut.write_text("".join(lines[:-3]))  # the kernel table cut off
    assert main([str(cut), "--log"]) == 1
    captured = capsys.readouterr()
    [run] = _runs(uri)
    assert json.loads(captured.out)["mlflow_run_id"] == run.info.run_id
    assert run.data.tags["dabench.status"] == "incomplete_artifact"
    assert f"recorded run {run.info.run_id} as incomplete_artifact" in captured.err


@pytest.mark.parametrize("fault, status", [("log_artifacts:ENOSPC", "disk_full"), ("tracking_log", "tracking_error")])
def test_a_full_disk_or_failed_store_is_one_line_and_exit_1(capsys, tmp_path, monkeypatch, fault, status):
    uri = _logged(monkeypatch, tmp_path)
    monkeypatch.setenv("DABENCH_FAULT", fault)
    assert main([str(FIXTURES / "sambaflow_small"), "--log"]) == 1
    captured = capsys.readouterr()
    [line] = [text for text in captured.err.splitlines() if text.startswith("dabench ingest: ")]
    assert line.startswith(f"dabench ingest: {status}: the run could not be recorded")
    assert "Traceback" not in captured.err and captured.out == ""
    monkeypatch.delenv("DABENCH_FAULT")
    [run] = _runs(uri)
    assert run.info.status != "RUNNING" or status == "tracking_error"


def test_help_documents_the_exit_statuses():
    done = subprocess.run(
        [sys.executable, "-m", "dabench", "ingest", "--help"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "Exit status: 0" in done.stdout and "disk_full" in done.stdout
