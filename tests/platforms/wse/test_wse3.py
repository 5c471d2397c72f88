"""Cerebras CS-3 (``hardware=wse3``): a generation preset of the wafer-scale platform. Its specs
compose over wse2.yaml's, it predicts pipelined and weight-streaming as the CS-2 does, its fitted
constants sit at the middle of the WSE-2 fit bounds, its band says nothing calibrated is near, and
advise takes it by name with its own power figure."""

import pytest

from dabench import predict
from dabench.advise.answer import rows
from dabench.advise.run import Request, advise
from dabench.core.platforms import preset
from dabench.fit.sources import load_sources
from dabench.perfmodel import constants
from tests.conftest import composed


def test_the_preset_composes_over_wse2():
    hw = composed(["hardware=wse3"])["hardware"]
    assert hw["name"] == "wse3" and hw["arch"] == "wse2" and hw["backend"] == "cstorch"
    assert hw["peak_flops"]["fp16"] == 1.5e16  # dense, not Cerebras' 125 PFLOP/s sparse figure
    assert hw["compute_units"] == [{"kind": "pes", "count": 900000}]
    assert {lv["name"]: lv["capacity_bytes"] for lv in hw["memory"]}["sram"] == 4.4e10
    assert hw["options"]["region_pes"] == composed(["hardware=wse2"])["hardware"]["options"]["region_pes"]


def test_the_dense_peak_is_marked_uncertain():
    entry = load_sources("wse3")["peak_flops.fp16"]
    assert entry.kind == "uncertain" and "sparsity" in entry.reason


@pytest.mark.parametrize("knob", ["ws_pe_efficiency", "ws_layer_latency_s", "fp16_loss_scaling_overhead"])
def test_constants_the_wse2_points_fit_are_the_wse2_fit_marked_uncertain(knob):
    assert load_sources("wse2")[f"options.{knob}"].kind == "fitted"
    assert load_sources("wse3")[f"options.{knob}"].kind == "uncertain"
    fit = constants.load()["platforms"]["wse2"]["constants"][f"options.{knob}"]["value"]
    assert composed(["hardware=wse3"])["hardware"]["options"][knob] == pytest.approx(float(fit))


@pytest.mark.parametrize("mode", ["pipelined", "weight_streaming"])
def test_both_execution_modes_predict_with_the_wide_band(mode):
    args = ["model=gpt2_small", "hardware.mode=predict", f"hardware.options.execution_mode={mode}"]
    r = predict(["hardware=wse3", *args])
    assert r.status.value == "ok", r.reason
    assert r.predicted.tags["execution_mode"] == mode
    band = r.notes["dabench.band"]
    assert band.startswith("wide:") and "no calibration point of generation wse3" in band
    wse2 = predict(["hardware=wse2", *args])
    assert not wse2.notes["dabench.band"].startswith("wide:")  # the CS-2 keeps its calibrated band


def test_advise_takes_the_preset_by_name_with_its_power():
    assert preset("wse3").power.watts_per_chip == 23000.0 and "CS-3" in preset("wse3").power.covers
    advice = advise(Request(model="gpt2_small", tokens=1e9, platforms=["wse3"], max_chips=2, trials=8))
    (row,) = rows(advice)
    assert row["platform"] == "wse3" and row["status"] == "ok", row["reason"]
    assert "hardware=wse3" in row["command"] and "CS-3" in row["power_source"]


def test_the_command_line_takes_the_family_options_of_the_preset():
    """A preset's options include those of the file its defaults name (check_option_keys)."""
    from dabench.config.schema import check_option_keys

    check_option_keys(["hardware=wse3", "hardware.options.execution_mode=weight_streaming"])
    with pytest.raises(Exception, match="did you mean hardware.options.execution_mode"):
        check_option_keys(["hardware=wse3", "hardware.options.execution_modee=pipelined"])
