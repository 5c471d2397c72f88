"""Validation of bad input: each refusal names the field, the value and what is valid."""

import pytest

from dabench.config.build import build_run_config, flatten
from dabench.core.status import ConfigError
from tests.conftest import composed


def refuse(overrides):
    with pytest.raises(ConfigError) as info:
        build_run_config(composed(overrides))
    return info.value


def test_default_config_is_the_tiny_model_on_cpu():
    rc = build_run_config(composed())
    assert (rc.model.name, rc.hardware.name, rc.parallel.strategy, rc.precision.name) == ("tiny", "cpu", "none", "fp32")
    assert rc.samples_per_step == rc.run.batch_size


def test_hidden_not_divisible_by_heads():
    error = refuse(["model.hidden_size=100", "model.n_heads=3"])
    assert error.field == "model.hidden_size" and error.value == 100 and "n_heads=3" in str(error)


def test_unknown_precision_is_refused_by_hydra_or_validation():
    error = refuse(["precision.name=fp4"])
    assert error.field == "precision.name" and "fp32" in error.valid


def test_pp_layers_must_sum_to_n_layers():
    error = refuse(["parallel=pp", "parallel.layers_per_stage=[1,2]", "model.n_layers=2"])
    assert error.field == "parallel.layers_per_stage" and "sum to model.n_layers=2" in str(error)


def test_pp_layers_must_match_degree():
    error = refuse(["parallel=pp", "parallel.degree=3", "parallel.layers_per_stage=[1,1]", "model.n_layers=2"])
    assert "parallel.degree=3" in str(error)


def test_pp_default_split_is_even():
    rc = build_run_config(composed(["parallel=pp", "parallel.degree=3", "model.n_layers=7"]))
    assert rc.parallel.layers_per_stage == (3, 2, 2)


def test_tp_degree_must_divide_heads():
    error = refuse(["parallel=tp", "parallel.degree=3"])
    assert error.field == "parallel.degree" and "n_heads=4" in str(error)


@pytest.mark.parametrize(
    "override,field",
    [
        ("run.batch_size=0", "run.batch_size"),
        ("run.timed_steps=-1", "run.timed_steps"),
        ("model.n_layers=0", "model.n_layers"),
        ("hardware.mode=fast", "hardware.mode"),
        ("run.threads=0", "run.threads"),
    ],
)
def test_bad_values_name_their_field(override, field):
    assert refuse([override]).field == field


def test_precision_the_hardware_lacks():
    error = refuse(["hardware=ipu", "precision=bf16"])
    assert error.field == "precision" and "fp16" in error.valid


def test_flatten():
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None}) == {"a.b": 1, "a.c.d": [1, 2], "e": None}
