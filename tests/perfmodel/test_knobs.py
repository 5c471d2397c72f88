"""Typed hardware knobs (dabench/perfmodel/knobs, each platform's knobs.py): built from
conf/hardware/<arch>.yaml's options (with those of the presets it inherits: gaudi3.yaml's
``defaults: [gaudi2]``), unknown names refused with the valid ones listed."""

import pytest

from dabench.core.platforms import names, platform
from dabench.core.status import ConfigError
from dabench.fit.sources import hardware_yaml
from dabench.perfmodel.knobs import build_knobs
from tests.conftest import composed

ARCHS = names()


@pytest.mark.parametrize("arch", ARCHS)
def test_shipped_options_build_the_typed_knobs(arch):
    knobs = build_knobs(arch, composed([f"hardware={arch}"])["hardware"].get("options") or {})
    assert type(knobs) is platform(arch).options()


def test_unknown_knob_lists_the_valid_ones_and_suggests_the_closest():
    options = hardware_yaml("wse2")["options"]
    with pytest.raises(ConfigError) as error:
        build_knobs("wse2", {**options, "execution_mod": "pipelined"})
    assert "did you mean hardware.options.execution_mode?" in str(error.value)
    assert "region_fill" in str(error.value)


def test_missing_and_out_of_range_knobs_are_refused_and_runner_keys_pass():
    options = hardware_yaml("wse2")["options"]
    with pytest.raises(ConfigError, match="missing"):
        build_knobs("wse2", {k: v for k, v in options.items() if k != "execution_mode"})
    with pytest.raises(ConfigError, match="must be > 0 and <= 1 "):
        build_knobs("wse2", {**options, "region_fill": 1.5})
    with pytest.raises(ConfigError, match="one of"):
        build_knobs("wse2", {**options, "execution_mode": "streaming"})
    assert build_knobs("wse2", {**options, "runner_num_csx": 2}).execution_mode == options["execution_mode"]


def test_a_misspelt_knob_fails_the_prediction_as_invalid_config():
    from tests.perfmodel.helpers import predict, run_config

    with pytest.raises(ConfigError, match="unknown key.*valid: "):
        predict(run_config("wse2", options={"kernel_util": 0.5}))


def test_a_knob_without_an_upper_bound_still_refuses_what_no_chip_has():
    """1e308 passed a bare ``low=0`` knob and overflowed a model's arithmetic to nan (config fuzzer)."""
    from dabench.core.status import ConfigError
    from dabench.perfmodel.knobs import MAX_KNOB

    options = hardware_yaml("wse2")["options"]
    assert build_knobs("wse2", {**options, "pe_flops_matmul": MAX_KNOB}).pe_flops_matmul == MAX_KNOB
    with pytest.raises(ConfigError, match="hardware.options.pe_flops_matmul=1e.308: must be > 0 and <= 1e\\+21"):
        build_knobs("wse2", {**options, "pe_flops_matmul": 1e308})
    assert build_knobs("wse2", {**options, "pe_flops_matmul": "2.75e16"}).pe_flops_matmul == 2.75e16
