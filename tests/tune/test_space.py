"""Hydra override grammar -> Optuna distributions, and values back to override text."""

import optuna
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from dabench.core.status import ConfigError
from dabench.tune.space import distribution_values, override_value, params_to_overrides, parse_overrides


def test_grammar_to_distributions():
    space = parse_overrides(
        [
            "run.batch_size=choice(1, 2, 4)",
            "precision=fp16,fp32",
            "a=range(1, 10, 2)",
            "b=interval(0.1, 1)",
            "c=tag(log, interval(1e-4, 1e-1))",
            "d=int(interval(1, 8))",
            "e=tag(log, int(interval(1, 64)))",
            "f=shuffle(range(1, 4))",
            "g=range(0.5, 2.0, 0.5)",
            "model=gpt2_test",
            "+x.y=3",
        ]
    )
    dists = {d.name: d.distribution for d in space.dimensions}
    assert dists["run.batch_size"] == CategoricalDistribution([1, 2, 4])
    assert dists["precision"] == CategoricalDistribution(["fp16", "fp32"])
    assert dists["a"] == IntDistribution(1, 9, step=2)
    assert dists["b"] == FloatDistribution(0.1, 1.0)
    assert dists["c"] == FloatDistribution(1e-4, 1e-1, log=True)
    assert dists["d"] == IntDistribution(1, 8)
    assert dists["e"] == IntDistribution(1, 64, log=True)
    assert dists["f"] == CategoricalDistribution([1, 2, 3])
    assert dists["g"] == FloatDistribution(0.5, 1.5, step=0.5)
    assert space.fixed == ("model=gpt2_test", "+x.y=3")


def test_bad_ranges_name_the_key():
    with pytest.raises(ConfigError, match="a=.*empty range"):
        parse_overrides(["a=range(5, 5)"])
    with pytest.raises(ConfigError, match="log scale needs a positive"):
        parse_overrides(["b=tag(log, interval(0, 1))"])
    with pytest.raises(ConfigError, match="listed twice"):
        parse_overrides(["a=1,2", "+a=3,4"])


@pytest.mark.parametrize(
    "value",
    [
        1,
        -3,
        0.25,
        1e-5,
        True,
        False,
        None,
        "fp16",
        "with space",
        "true",
        "a'b",
        [0, 4, 4, 4],
        [],
        {"k": 1, "v": [1, 2]},
        "x:y",
        "study\\name",
        "c:\\dir\\x y",
        "ends\\",
        "a\\'b",
    ],
)
def test_override_value_round_trips_through_hydra(value):
    parsed = OverridesParser.create().parse_override(f"key={override_value(value)}").value()
    assert parsed == value


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40))
@settings(max_examples=200, deadline=None)
def test_any_text_keeps_its_exact_characters_through_hydra(text):
    """A study name or tag reaches a job's config as given: no doubled backslashes."""
    assert OverridesParser.create().parse_override(f"key={override_value(text)}").value() == text


def test_list_choices_are_decoded_when_suggested():
    space = parse_overrides(["parallel.layers_per_stage=choice([0,4,4,4],[0,6,3,3])"])
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = set()
    for _ in range(10):
        trial = study.ask()
        value = space.suggest(trial)["parallel.layers_per_stage"]
        assert isinstance(value, list)
        seen.add(tuple(value))
        study.tell(trial, 0.0)
    assert seen == {(0, 4, 4, 4), (0, 6, 3, 3)}


def test_params_mapping_and_values():
    overrides = params_to_overrides({"run.batch_size": "choice(1, 2)", "precision": "fp16,mixed", "run.seed": 3})
    space = parse_overrides(overrides)
    assert space.fixed == ("run.seed=3",)
    assert [distribution_values(d.distribution) for d in space.dimensions] == [[1, 2], ["fp16", "mixed"]]
    with pytest.raises(ValueError, match="continuous"):
        distribution_values(parse_overrides(["x=interval(0, 1)"]).dimensions[0].distribution)
