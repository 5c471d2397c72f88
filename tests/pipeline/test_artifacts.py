"""Item 9: a truncated or inconsistent vendor artifact is ingested as incomplete_artifact with the
reason, never ok; an artifact folder is untrusted input (regular files inside it only, within
limits, and what was skipped is said). Broken copies are made here from the real fixtures."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from dabench.cli.ingest import main as profiles_main
from dabench.ingest.parse import parse
from dabench.ingest.safety import scan
from tests.conftest import ROOT, SHARED_FIXTURES

REPORTS = sorted((SHARED_FIXTURES / "cerebras" / "compile_reports").glob("compile_report_*.txt"))
LOCAL = ROOT / "tests" / "vendors" / "fixtures"
pytestmark = pytest.mark.skipif(not REPORTS, reason="shared fixtures not present")


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.name)
def test_real_compile_reports_are_complete(report):
    assert parse(report).status == "ok" and parse(report).problems == []


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.name)
def test_a_compile_report_cut_in_half_is_incomplete(tmp_path, report):
    lines = report.read_text().splitlines(keepends=True)
    cut = tmp_path / "compile_report.txt"
    cut.write_text("".join(lines[: len(lines) // 2]))
    parsed = parse(cut)
    assert parsed.status == "incomplete_artifact" and "not closed" in parsed.reason
    assert parsed.to_dict()["status"] == "incomplete_artifact"


def test_a_compile_report_cut_mid_line_or_with_edited_totals_is_incomplete(tmp_path):
    text = REPORTS[0].read_text()  # compile_report_11
    cut = tmp_path / "mid.txt"
    cut.write_text(text[: int(len(text) * 0.9)])
    assert parse(cut).status == "incomplete_artifact"
    edited = tmp_path / "edited.txt"
    header = next(line for line in text.splitlines() if line.startswith("Samples/s:"))
    edited.write_text(text.replace(header, "Samples/s:  1.0", 1))
    assert "is not the slowest kernel's" in parse(edited).reason
    no_patio = tmp_path / "no_patio.txt"
    no_patio.write_text("".join(line for line in text.splitlines(keepends=True) if not line.startswith("| patio ")))
    assert "no patio row" in parse(no_patio).reason
    orphan = tmp_path / "orphan.txt"  # a kernel's own row removed, its sub-kernels left
    orphan.write_text("".join(line for line in text.splitlines(keepends=True) if not line.startswith("| fc22 ")))
    assert "without their own row" in parse(orphan).reason


def test_sambaflow_folder_with_a_missing_section_or_cut_json_is_incomplete(tmp_path):
    real = SHARED_FIXTURES / "sambanova" / "logreg"
    assert parse(real).status == "ok"
    missing = tmp_path / "missing"
    shutil.copytree(real, missing)
    (missing / "logreg.s1.utilization_report.json").unlink()
    assert "section(s) [1] missing" in parse(missing).reason
    cut = tmp_path / "cut"
    shutil.copytree(real, cut)
    target = cut / "logreg.s2.utilization_report.json"
    target.write_text(target.read_text()[: len(target.read_text()) // 2])
    assert "logreg.s2.utilization_report.json is not valid JSON" in parse(cut).reason
    stage = max((cut / "stage_buffers").glob("stage_info_*.json"), key=lambda p: p.stat().st_size)
    stage.write_text(stage.read_text()[: stage.stat().st_size // 2])
    assert f"stage_buffers/{stage.name} is not valid JSON" in parse(cut).reason


def test_appliance_run_with_cut_json_and_popvision_with_a_missing_ipu(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SHARED_FIXTURES / "cerebras" / "appliance_run", run)
    track = run / "executors" / "000001" / "track.json"
    track.write_text(track.read_text()[:40])
    assert "track.json is not valid JSON" in parse(run).reason
    data = json.loads((LOCAL / "popvision_small.json").read_text())
    data["ipus"] = data["ipus"][:-1]
    cut = tmp_path / "popvision.json"
    cut.write_text(json.dumps(data))
    assert "IPU entries are present" in parse(cut).reason


def test_incomplete_artifact_is_logged_as_such_never_ok(tmp_path, isolated_env, capsys):
    lines = REPORTS[0].read_text().splitlines(keepends=True)
    cut = tmp_path / "compile_report.txt"
    cut.write_text("".join(lines[: len(lines) // 2]))
    assert profiles_main([str(cut), "--log"]) == 1  # a recorded non-ok run, as any failed single run
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=os.environ["MLFLOW_TRACKING_URI"])
    [run] = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    assert run.data.tags["dabench.status"] == "incomplete_artifact" and run.info.status == "FAILED"
    assert "not closed" in run.data.tags["dabench.reason"]
    assert "incomplete artifact" in capsys.readouterr().err


def test_an_artifact_folder_is_untrusted_input(tmp_path):
    folder = tmp_path / "art"
    shutil.copytree(SHARED_FIXTURES / "sambanova" / "logreg", folder)
    secret = tmp_path / "secret.json"
    secret.write_text('{"templates": {}, "used": {"total": {"pcus": 999}}}')
    (folder / "evil.s9.utilization_report.json").symlink_to(secret)  # a link out of the folder
    (folder / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(folder / "pipe.s8.utilization_report.json")  # reading it would block forever
    deep = folder.joinpath(*[f"d{i}" for i in range(10)])
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("deep")
    big = folder / "big.bin"
    with open(big, "wb") as handle:
        handle.truncate(300 * 2**20)  # sparse: larger than the limit, no disk used
    report = parse(folder)
    assert report.status == "ok"  # the real files parse; nothing outside was read
    assert all(str(folder) in f and "secret" not in f for f in report.files)
    skipped = "\n".join(report.skipped)
    for expected in (
        "evil.s9.utilization_report.json: a symbolic link",
        "linkdir: a symbolic link",
        "pipe.s8.utilization_report.json: a fifo",
        "deeper than 8 folders",
        "big.bin: larger than",
    ):
        assert expected in skipped, skipped
    assert report.details["sections"] and all(s["pcus"] != 999 for s in report.details["sections"])


def test_a_fifo_named_directly_is_refused_not_read(tmp_path, capsys):
    os.mkfifo(tmp_path / "compile_report.txt")
    assert profiles_main([str(tmp_path / "compile_report.txt")]) == 2
    assert "a fifo" in capsys.readouterr().err


def test_scan_limits_count_and_total(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("x" * 100)
    found = scan(tmp_path, max_files=3)
    assert len(found.files) == 3 and sum("more than 3 files" in s for s in found.skipped) == 2
    found = scan(tmp_path, max_total_bytes=250)
    assert len(found.files) == 2 and any("in all" in s for s in found.skipped)
