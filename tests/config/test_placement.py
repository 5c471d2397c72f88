"""parallel.placement in the config build: it sets stages, degree and the layer count, once."""

import pytest

from dabench.config.build import apply_placement, build_run_config
from dabench.core.placement import Placement
from dabench.core.status import ConfigError
from tests.perfmodel.helpers import run_config


def test_run_config_carries_the_type():
    cfg = {
        "model": {"name": "t", "n_layers": 2, "hidden_size": 64, "n_heads": 2, "seq_len": 16, "vocab_size": 128},
        "hardware": {
            "name": "ipu",
            "arch": "ipu",
            "backend": "poptorch",
            "mode": "predict",
            "peak_flops": {"fp32": 1e12},
            "memory": [{"name": "sram", "capacity_bytes": 1e9, "bandwidth_Bps": 1e12}],
            "compute_units": [{"kind": "tiles", "count": 1472}],
        },
        "parallel": {"strategy": "pp", "placement": "0 2 1"},
        "precision": {"name": "fp32"},
    }
    rc = build_run_config(cfg)
    assert isinstance(rc.parallel.layers_per_stage, Placement)
    assert rc.parallel.layers_per_stage == (0, 2, 1) and rc.parallel.degree == 3 and rc.model.n_layers == 3


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
