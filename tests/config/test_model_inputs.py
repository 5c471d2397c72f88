"""Every hardware option of every shipped hardware config, and the constant set, are checked when
a job is prepared (pipeline/job.prepare -> pipeline/preflight.model_inputs_error), before a run
opens: a bad value is a one-line ConfigError naming ``hardware.options.<knob>`` (or
``hardware.constants``). Driven by the knob registry (platforms/<family>/knobs.py): a new knob is covered
without a new test."""

from __future__ import annotations

import copy
import json
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dabench.config import schema
from dabench.config.compose import compose
from dabench.config.fields import BOOL, CHOICE, INT, specs
from dabench.config.files import hardware_preset
from dabench.config.paths import CONF_DIR
from dabench.core.platforms import platform
from dabench.pipeline.job import prepare


@lru_cache(maxsize=None)
def _container(hardware: str) -> dict:
    return compose([f"hardware={hardware}", "hardware.mode=predict"])


def _knobs(hardware: str) -> dict:
    path = CONF_DIR / "hardware" / f"{hardware}.yaml"  # at collection: the preset's file, not a composition
    arch = hardware_preset(path)["arch"] if path.is_file() else _container(hardware)["hardware"]["arch"]
    return specs(platform(arch).options())


CASES = [(hw, name) for hw in schema.group_options("hardware") for name in _knobs(hw)]


def bad_values(spec) -> st.SearchStrategy:
    junk = st.sampled_from([float("nan"), float("inf"), float("-inf"), "", "zzz", [], {}])
    if spec.kind == BOOL:
        return st.one_of(junk, st.sampled_from(["maybe", 2, 0.5, "yes please"]))
    out = [junk]
    if spec.kind != CHOICE:
        if spec.low is not None:
            out.append(st.floats(max_value=spec.low, allow_nan=False, allow_infinity=False))
        out.append(st.floats(min_value=spec.high, exclude_min=True, allow_nan=False))
        if spec.kind == INT:
            out.append(st.floats(min_value=1.1, max_value=1e6).filter(lambda x: not float(x).is_integer()))
    if spec.kind == CHOICE:
        out.append(st.text(min_size=1, max_size=8).filter(lambda t: t not in spec.choices))
    return st.one_of(*out)


@pytest.mark.parametrize("hardware, name", CASES, ids=[f"{h}:{n}" for h, n in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_a_bad_hardware_option_is_refused_when_the_job_is_prepared(hardware, name, data):
    spec = _knobs(hardware)[name]
    value = data.draw(bad_values(spec))
    if spec.choices and isinstance(value, str) and value in spec.choices:
        return
    container = copy.deepcopy(_container(hardware))
    container["hardware"]["options"][name] = value
    job = prepare(container)
    assert job.error is not None and job.rc is None, (hardware, name, value)
    message = str(job.error)
    assert "\n" not in message and f"hardware.options.{name}" in message, message


@pytest.mark.parametrize("hardware", schema.group_options("hardware"))
def test_every_shipped_hardware_config_is_prepared(hardware):
    job = prepare(copy.deepcopy(_container(hardware)))
    assert job.error is None, job.error


def test_a_damaged_constant_set_is_refused_when_the_job_is_prepared(tmp_path):
    from dabench.perfmodel.constants import DIR

    data = json.loads((DIR / "published.json").read_text())
    arch = next(a for a, e in data["platforms"].items() if "factor" in (e.get("band") or {}))
    data["platforms"][arch]["band"]["factor"] = -1.0
    bad = tmp_path / "damaged.json"
    bad.write_text(json.dumps(data))
    container = copy.deepcopy(_container("ipu"))
    container["hardware"]["constants"] = str(bad)
    job = prepare(container)
    assert job.error is not None and "hardware.constants" in str(job.error) and str(bad) in str(job.error)
    assert "\n" not in str(job.error)


def test_a_bad_option_on_the_command_line_records_nothing(run_cli, tmp_path):
    for override in ("hardware.options.clock_hz=-5", "hardware.options.nosuch=1", "+hardware.options.nosuch=1"):
        done = run_cli("hardware=ipu", "hardware.mode=predict", override, code=2)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "hardware.options." in lines[0], (override, done.stderr[-2000:])
        assert not (tmp_path / "mlruns").exists(), override
