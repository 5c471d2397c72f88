"""parallel.placement: the layers-per-IPU string that sets stages, degree and the layer count."""

import pytest

from dabench.config.build import apply_placement, parse_placement
from dabench.core.status import ConfigError
from tests.perfmodel.helpers import run_config


@pytest.mark.parametrize("text,layers", [
    ("0 4 4 4", (0, 4, 4, 4)),
    ("0 1x8 0x7", (0,) + (1,) * 8 + (0,) * 7),
    ("0 2 1x14", (0, 2) + (1,) * 14),
    ([0, 3, 3], (0, 3, 3)),
])
def test_parse_placement(text, layers):
    assert parse_placement(text) == layers


@pytest.mark.parametrize("bad", ["0 four", "0 -1", "", "0 0", "1x", [0, -2], 7])
def test_bad_placements_are_refused_naming_the_field(bad):
    with pytest.raises(ConfigError) as info:
        parse_placement(bad)
    assert info.value.field == "parallel.placement"


def test_a_placement_sets_degree_stages_and_layer_count():
    rc = run_config("ipu", model="gpt2_test", precision="fp16", parallel="pp", placement="0 6 5 5")
    assert rc.parallel.degree == 4 and rc.parallel.layers_per_stage == (0, 6, 5, 5)
    assert rc.model.n_layers == 16
    container = apply_placement({"model": {"n_layers": 4}, "parallel": {"strategy": "pp", "placement": "0 1x14 2"}})
    assert container["model"]["n_layers"] == 16 and container["parallel"]["degree"] == 16


def test_placement_only_applies_to_pipeline_parallelism():
    with pytest.raises(ConfigError) as info:
        run_config("ipu", model="gpt2_test", parallel="dp", placement="0 4")
    assert info.value.field == "parallel.placement"
    with pytest.raises(ConfigError) as info:
        run_config("ipu", model="gpt2_test", parallel="pp", placement="0 4", layers_per_stage=[2, 2])
    assert info.value.field == "parallel.layers_per_stage"
