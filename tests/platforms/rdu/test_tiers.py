"""SambaNova SN40L (``hardware=sn40l``): three memory tiers priced by where the tensors live
(dabench/platforms/rdu/model.py, ``place``; docs/perfmodel.md, "SN30 RDU", Memory tiers). A model
whose weights fit the SRAM the sections leave free keeps them on chip, a larger one holds them in
HBM, and one beyond HBM spills to DDR; the memory time follows the tier's bandwidth. The SN30
(DDR only) has one tier and keeps its model exactly."""

import pytest

from dabench import predict as run
from dabench.core.platforms import preset
from dabench.platforms.rdu import model as rdu
from dabench.workload.opgraph import build_opgraph
from tests.conftest import composed
from tests.perfmodel.helpers import predict, run_config

TINY = {"n_layers": 2, "hidden_size": 256, "n_heads": 4}


def _placement(model: str, over=None, hardware: str = "sn40l"):
    rc = run_config(hardware, model=model, batch_size=4, precision="bf16", model_over=over)
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    return rdu.place(rc, graph, rdu.knobs(rc), 1), rc


def test_the_preset_has_three_tiers():
    hw = composed(["hardware=sn40l"])["hardware"]
    assert hw["arch"] == "rdu" and hw["chips_per_node"] == 16
    assert {lv["name"]: lv["capacity_bytes"] for lv in hw["memory"]} == {"hbm": 6.4e10, "ddr": 1.5e12, "sram": 5.2e8}
    assert hw["peak_flops"]["bf16"] == 6.38e14


@pytest.mark.parametrize(
    "model, over, weights",
    [("gpt2_small", TINY, "sram"), ("gpt2_xl", None, "hbm"), ("llama_70b", None, "ddr")],
)
def test_weights_live_in_the_fastest_tier_that_holds_them(model, over, weights):
    placement, rc = _placement(model, over)
    assert placement.tiers["weights"] == weights
    price = rdu._priced(rdu.knobs(rc), placement, rc.hardware).price[0]
    ddr = rc.hardware.bandwidth("ddr")
    assert price == pytest.approx(ddr / rc.hardware.bandwidth(weights))  # the memory time follows the tier


def test_a_class_that_fits_no_faster_tier_goes_to_ddr():
    placement, _ = _placement("gpt_13b")  # 13B bf16 weights + grads (52 GB) fit HBM; the rest does not
    assert placement.tiers == {"weights": "hbm", "activations": "ddr", "optimizer": "ddr"}
    assert placement.placed["hbm"] < 6.4e10


def test_memory_time_falls_with_the_tier():
    """The same sections priced in HBM (SN40L) take less memory time than in DDR."""
    rc = run_config("sn40l", model="gpt2_xl", batch_size=4, precision="bf16", options={"compile_mode": "o0"})
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    k = rdu.knobs(rc)
    tiered = rdu._priced(k, rdu.place(rc, graph, k, 1), rc.hardware)
    ddr_only = sum(rdu.section_time(s, k, 4).ddr_s for secs in rdu.sections(graph, k, 1).values() for s in secs)
    in_hbm = sum(rdu.section_time(s, tiered, 4).ddr_s for secs in rdu.sections(graph, tiered, 1).values() for s in secs)
    assert in_hbm == pytest.approx(ddr_only * rc.hardware.bandwidth("ddr") / rc.hardware.bandwidth("hbm"), rel=1e-9)


def test_the_profile_reports_the_placement():
    profile, metrics = predict(run_config("sn40l", model="llama_70b", batch_size=4, precision="bf16"))
    assert profile.tags["placement"] == "weights in ddr, activations in ddr, optimizer in ddr"
    assert metrics["memory.peak_bytes.ddr"] > 6.4e10 and metrics["memory.peak_bytes.hbm"] == 0.0
    assert metrics["rdu.tier_price.weights"] == 1.0


def test_sn30_has_one_tier_and_no_placement():
    placement, _ = _placement("gpt2_small", TINY, "rdu")
    assert placement is None
    profile, _ = predict(run_config("rdu", model="gpt2_small", batch_size=4, precision="bf16"))
    assert "placement" not in profile.tags


def test_the_band_and_power_of_the_preset():
    r = run(["hardware=sn40l", "model=gpt2_small", "hardware.mode=predict", "precision=bf16"])
    assert r.status.value == "ok", r.reason
    assert r.notes["dabench.band"].startswith("wide:") and "generation sn40l" in r.notes["dabench.band"]
    assert not preset("sn40l").power.sourced and "SN40L" in preset("sn40l").power.covers
