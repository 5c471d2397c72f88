"""Vendor artifact parsers on small hand-checked fixtures (tests/vendors/fixtures) and on the real
artifacts in ../shared/fixtures (skipped when absent)."""

from __future__ import annotations

import json
import math

import pytest
from vendor_helpers import FIXTURES, SHARED, requires_shared

from dabench.ingest.parse import detect, parse
from dabench.platforms.ipu.ingest import tile_balance
from dabench.platforms.rdu.ingest import stage_load_imbalance
from dabench.platforms.wse.ingest import kernel_class, parse_compile_report

approx = pytest.approx


# ----------------------------------------------------------------------------- Cerebras compile report


def test_compile_report_small_fixture_by_hand():
    report = parse(FIXTURES / "compile_report_small.txt")
    metrics = report.metrics()
    assert report.source == "cerebras_compile_report"
    # top-level kernels 400 + 300 + 100 + 100 + 50 + 50 PEs of the 2,000-PE patio budget
    assert report.units["pes"].allocated == 1000 and report.units["pes"].available == 2000
    assert metrics["tier1.allocation_ratio"] == approx(0.5)
    assert metrics["throughput.samples_per_s"] == 1000.0
    assert report.throughput_basis == "compiler_estimate"
    assert report.bottleneck == "attention1"
    # costs 1/r: (4 + 2 + 1 + 2 + 1) / 5 / 4 over the five kernels with a rate (add1 has '--')
    assert metrics["tier1.load_imbalance"] == approx(0.5)
    assert metrics["cerebras.load_imbalance.compute_kernels"] == approx(0.75)
    assert [s.name for s in report.subtasks] == ["attention1", "fc1", "emb1", "mlm_loss1", "layer_norm1", "add1"]
    shares = {c: metrics[f"cerebras.pe_share.{c}"] for c in ("attention", "fc", "embedding", "loss", "norm", "other")}
    assert shares == approx({"attention": 0.4, "fc": 0.3, "embedding": 0.1, "loss": 0.1, "norm": 0.05, "other": 0.05})
    assert metrics["cerebras.pe_weighted_utilization"] == approx(0.735)
    assert metrics["cerebras.active_pes_reported"] == approx(0.5)
    assert metrics["cerebras.compute_utilization"] == approx(0.8)


def test_kernel_classes():
    assert [
        kernel_class(n)
        for n in ("attention12", "fc22", "emb_fc1", "pos_encoding2", "mlm_loss1", "layer_norm31", "dropout4", "patio")
    ] == ["attention", "fc", "embedding", "embedding", "loss", "norm", "other", "other"]


def test_compile_report_rejects_other_text():
    with pytest.raises(ValueError, match="not a Cerebras compile report"):
        parse_compile_report("hello\nworld\n")


@requires_shared
@pytest.mark.parametrize(
    "number, samples, active_pct, bottleneck",
    [(7, 5887.1, 37, "attention12"), (11, 5897.5, 58, "mlm_loss1"), (13, 5897.5, 79, "mlm_loss1")],
)
def test_real_compile_reports_match_their_headers(number, samples, active_pct, bottleneck):
    report = parse(SHARED / "cerebras" / "compile_reports" / f"compile_report_{number}.txt")
    metrics = report.metrics()
    assert metrics["throughput.samples_per_s"] == samples
    # the kernel table reproduces the header's (rounded) Active PEs and its Samples/s = slowest kernel
    assert round(100 * metrics["tier1.allocation_ratio"]) == active_pct
    assert min(s.rate for s in report.subtasks if s.rate) == samples
    assert report.bottleneck == bottleneck
    assert report.units["pes"].available == 307840


@requires_shared
def test_real_compile_report_7_acceptance_numbers():
    report = parse(SHARED / "cerebras" / "compile_reports" / "compile_report_7.txt")
    assert report.units["pes"].allocated == 115259
    assert report.metrics()["tier1.allocation_ratio"] == approx(0.374, abs=0.002)
    # paper-notes: the overall Compute Utilization is the PE-weighted mean of kernel utilisations
    assert report.metrics()["cerebras.pe_weighted_utilization"] == approx(0.72, abs=0.01)


# ----------------------------------------------------------------------------- Cerebras appliance run


def test_appliance_run_small_fixture():
    report = parse(FIXTURES / "appliance_run")
    metrics = report.metrics()
    assert report.source == "cerebras_appliance_run"
    assert metrics["throughput.samples_per_s"] == 160.0 and report.throughput_basis == "measured"
    assert report.samples_per_step == 32
    assert report.step_times_s == approx([0.32, 0.16, 0.08])  # batch / Rate per logged line
    assert report.phases_s["compile"] == 300.0 and report.phases_s["compile/cirh_end"] == 250.0
    assert metrics["cerebras.phase_s.compile"] == 300.0
    assert metrics["cerebras.flops_utilization"] == 12.5
    assert (metrics["cerebras.tasks.WGT"], metrics["cerebras.tasks.ACT"], metrics["cerebras.tasks.WSE"]) == (2, 3, 1)
    assert "tier1.allocation_ratio" not in metrics  # 2.x exposes no PE table
    profile = report.to_profile(tokens_per_step=32 * 128)
    assert profile.mode == "measure" and profile.samples_per_s == approx(32 / 0.16)


def test_appliance_run_detected_from_any_of_its_files():
    folder = FIXTURES / "appliance_run"
    for path in (
        folder,
        folder / "run.log",
        folder / "executors" / "000001" / "performance.json",
        folder / "executors" / "000001",
    ):
        assert detect(path)[0] == "cerebras_appliance_run", path


@requires_shared
def test_real_appliance_run():
    report = parse(SHARED / "cerebras" / "appliance_run")
    metrics = report.metrics()
    # performance.json is empty in this (interrupted) run: the last GlobalRate line is used
    assert metrics["throughput.samples_per_s"] == 1319.17
    assert report.samples_per_step == 64  # "Effective batch size is 64."
    assert metrics["cerebras.rate_lines"] == 142
    assert metrics["cerebras.phase_s.compile"] == approx(471.9789203)
    assert metrics["cerebras.tasks.ACT"] == 23 and metrics["cerebras.tasks.WGT"] == 24
    assert report.info["cerebras.version.appliance-client"] == "2.3.0"
    assert any("empty" in note for note in report.notes)


# ----------------------------------------------------------------------------- SambaFlow


def test_sambaflow_small_fixture_by_hand():
    report = parse(FIXTURES / "sambaflow_small")
    metrics = report.metrics()
    assert report.source == "sambaflow_compile" and report.subtask_kind == "section_stage"
    # PCUs per section 64, 128, 32 of 640 -> mean allocation 74.67 / 640
    assert metrics["tier1.allocation_ratio.pcus"] == approx((64 + 128 + 32) / 3 / 640)
    assert metrics["tier1.allocation_ratio.pmus"] == approx((128 + 64 + 32) / 3 / 640)
    assert metrics["rdu.allocation_ratio_max.pcus"] == approx(0.2)
    # section 0 stages 100/300/200 (mean 200, max 300), section 1 400/400: (200 + 400) / (300 + 400)
    assert metrics["tier1.load_imbalance"] == approx(600 / 700)
    assert report.bottleneck == "section1.stage0"
    assert len(report.subtasks) == 5 and report.subtasks[1].units == {"pcus": 8.0, "pmus": 2.0}
    assert metrics["rdu.ddr.data_load_bytes"] == 4000 and metrics["rdu.ddr.grad_store_bytes"] == 4000
    assert metrics["rdu.bw_ratio_max.vector"] == 3.0 and metrics["rdu.bw_ratio_max.scalar"] == 0.5
    # SambaTune: sections at 1000, 500, 1000 samples/s run back to back -> 1 / (1/1000 + 1/500 + 1/1000)
    assert metrics["throughput.samples_per_s"] == approx(250.0)
    assert metrics["rdu.measured_sections_time_s"] == approx(0.004)


def test_stage_load_imbalance_ignores_sections_without_latency():
    assert stage_load_imbalance({0: [0, 0], 1: [10, 30]}) == approx(20 / 30)
    assert stage_load_imbalance({0: []}) is None


def test_sambatune_csv_alone():
    report = parse(FIXTURES / "sambaflow_small" / "reports" / "section_report.csv")
    assert report.source == "sambatune_section_report"
    assert [s.time_s for s in report.subtasks] == [0.001, 0.002, 0.001]
    assert report.metrics()["tier1.load_imbalance"] == approx((0.004 / 3) / 0.002)


@requires_shared
def test_real_sambaflow_logreg_folder():
    report = parse(SHARED / "sambanova" / "logreg")
    metrics = report.metrics()
    # 4 sections using 5, 6, 2, 2 PCUs and 16, 20, 8, 3 PMUs of available.fcmus = 640
    assert report.units["pcus"].allocated == approx(15 / 4) and report.units["pcus"].available == 640
    assert metrics["rdu.allocation_ratio_max.pmus"] == approx(20 / 640)
    assert metrics["rdu.sections"] == 4
    assert report.bottleneck == "section3.stage0" and report.subtasks[0].cycles == 568
    assert metrics["tier1.load_imbalance"] == 1.0  # one stage with a latency
    assert metrics["rdu.ddr.weight_load_bytes"] == 50176 + 100352


# ----------------------------------------------------------------------------- PopVision


def test_popvision_small_fixture_by_hand():
    report = parse(FIXTURES / "popvision_small.json")
    metrics = report.metrics()
    assert report.source == "popvision_json" and report.chips == 2
    assert metrics["tier1.allocation_ratio.tiles"] == approx(6 / 8)
    assert metrics["tier1.allocation_ratio.ipu_memory"] == approx(400 / 800)
    assert [s.time_s for s in report.subtasks] == approx([3e-3, 1e-3])  # cycles / 1 GHz
    assert metrics["tier1.load_imbalance"] == approx(2 / 3)
    assert report.bottleneck == "ipu0"
    assert metrics["ipu.0.tile_balance"] == 1.0
    assert metrics["ipu.1.tile_balance"] == approx(1 - 25 / math.sqrt(25 * 75))
    assert metrics["memory.peak_bytes.sram"] == 300


def test_popvision_without_cycles_balances_memory(tmp_path):
    data = json.loads((FIXTURES / "popvision_small.json").read_text())
    for ipu in data["ipus"]:
        del ipu["cycles"]
    path = tmp_path / "graph_only.json"
    path.write_text(json.dumps(data))
    report = parse(path)
    assert report.metrics()["tier1.load_imbalance"] == approx(200 / 300)
    assert "memory" in report.load_imbalance_basis


def test_tile_balance_bounds():
    assert tile_balance(50, 0, 100) == 1.0
    assert tile_balance(50, 50, 100) == 0.0  # half the tiles full, half empty
    assert tile_balance(0, 0, 100) == 1.0


def test_unknown_paths_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(ValueError, match="unknown artifact"):
        detect(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="no known vendor artifacts"):
        detect(tmp_path)
    with pytest.raises(ValueError, match="no such file"):
        detect(tmp_path / "missing")


def test_popvision_per_tile_memory_wins_over_the_summary(tmp_path):
    data = json.loads((FIXTURES / "popvision_small.json").read_text())
    data["ipus"][1]["tile_memory"] = [100, 0, 0, 0]  # the summary said 100 bytes on 2 tiles
    path = tmp_path / "tiles.json"
    path.write_text(json.dumps(data))
    report = parse(path)
    assert report.units["tiles"].allocated == 4 + 1
    assert report.extra["ipu.1.tile_balance"] == approx(1 - math.sqrt(1875) / math.sqrt(25 * 75))


def test_popvision_exporter_on_a_pva_like_report():
    """The exporter (normally run with the SDK's pva) on objects shaped like libpva's report."""
    import sys

    from vendor_helpers import FAKES

    sys.path.insert(0, str(FAKES))
    try:
        import pva  # the fake

        from dabench.platforms.ipu.export import summarise
        from dabench.platforms.ipu.ingest import parse_popvision

        summary = summarise(pva.openReport("profile.pop"))
    finally:
        sys.path.remove(str(FAKES))
    assert [i["tile_memory"] for i in summary["ipus"]] == [[50, 50, 50, 50], [100, 0, 100, 0]]
    assert [i["cycles"] for i in summary["ipus"]] == [2000, 6000]  # the Sync step is left out
    assert summary["poplar_version"] == "3.3.0-fake" and summary["target"]["tilesPerIpu"] == 4
    report = parse_popvision(summary)
    assert report.bottleneck == "ipu1" and report.metrics()["tier1.load_imbalance"] == approx(4000 / 6000)
