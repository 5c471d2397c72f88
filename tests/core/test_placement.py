"""The Placement type: parsed once in build_run_config, a tuple downstream."""

import pytest

from dabench.config.build import build_run_config
from dabench.core.placement import Placement
from dabench.core.status import ConfigError


def test_parse_and_format():
    p = Placement.parse("0 1x3 2")
    assert p == (0, 1, 1, 1, 2) and p.stages == 5 and p.n_layers == 5 and str(p) == "0 1 1 1 2"
    assert Placement.parse([0, 4, 4, 4]) == (0, 4, 4, 4)
    assert Placement.even(7, 3) == (3, 2, 2)
    with pytest.raises(ConfigError, match="parallel.placement"):
        Placement.parse("0 a")


def test_run_config_carries_the_type():
    cfg = {"model": {"name": "t", "n_layers": 2, "hidden_size": 64, "n_heads": 2, "seq_len": 16, "vocab_size": 128},
           "hardware": {"name": "ipu", "arch": "ipu", "backend": "poptorch", "mode": "predict",
                        "peak_flops": {"fp32": 1e12}, "memory": [{"name": "sram", "capacity_bytes": 1e9, "bandwidth_Bps": 1e12}],
                        "compute_units": [{"kind": "tiles", "count": 1472}]},
           "parallel": {"strategy": "pp", "placement": "0 2 1"},
           "precision": {"name": "fp32"}}
    rc = build_run_config(cfg)
    assert isinstance(rc.parallel.layers_per_stage, Placement)
    assert rc.parallel.layers_per_stage == (0, 2, 1) and rc.parallel.degree == 3 and rc.model.n_layers == 3
