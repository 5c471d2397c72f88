"""Property-based fuzzing of every config leaf (issue 23): a bad value is refused up front or the
run ends with a status, never with a traceback and never ``ok`` with impossible numbers.

Each group option (every YAML file of model/, hardware/, parallel/, precision/, and config.yaml's
run and tracking) is composed once with ``hardware.mode=predict``; every leaf of its section
(list items and open-map values included) is a target. A target gets a fixed set of nasty values
and then Hypothesis-drawn ones (wrong types, out of range, boundaries, empty, huge, NaN/inf,
unicode, path-like). Outcome: :func:`~dabench.config.build.build_run_config` raises a one-line
ConfigError naming a config field (the fuzzed one when the value breaks its own spec), or the
config is predicted through the pipeline ``dabench.predict`` uses (``dabench.pipeline.job``)
and ends with a status other than ``crashed``; an ``ok`` has physically possible metrics.

Profiles: ``fast`` (default, few examples, derandomized) and ``long`` (DABENCH_FUZZ=long; run by
the slow test at the end, or ``DABENCH_FUZZ=long pytest tests/config/test_fuzz.py``).
"""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
import sys
from functools import lru_cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dabench.config import schema
from dabench.config.build import build_run_config
from dabench.config.fields import BOOL, CHOICE, INT, ITEMS, MAP, NUMBER, TEXT, Spec, specs
from dabench.core.status import ConfigError, Status
from tests.conftest import ROOT, schema_leaves

settings.register_profile(
    "fast", max_examples=4, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
settings.register_profile(
    "long", max_examples=30, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
PROFILE = "long" if os.environ.get("DABENCH_FUZZ") == "long" else "fast"
FUZZ = settings.get_profile(PROFILE)

GROUPS = ("model", "hardware", "parallel", "precision")
#: values every target gets, whatever the profile
NASTY: list[Any] = [
    None,
    True,
    "",
    " ",
    "../../etc/passwd",
    "/dev/null",
    "C:\\con",
    "é🙂\u200b",
    "a\nb",
    "nan",
    "8",
    -1,
    0,
    1,
    2**63,
    10**400,
    -(10**400),
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    -0.0,
    2.5,
    [],
    {},
    [1],
    {"a": 1},
    "x" * 5000,
    "0 1x99999999999",
]

Path = tuple  # ("hardware", "memory", 1, "bandwidth_Bps")


def dotted(path: Path) -> str:
    out = str(path[0])
    for part in path[1:]:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


#: keys of list items (``hardware.memory[i].<key>``)
ITEM_KEYS = {path: tuple(specs(spec.item_type)) for path, spec in schema.fields().items() if spec.kind == ITEMS}
#: maps whose keys are free (their values are still checked)
OPEN_MAPS = tuple(path for path, spec in schema.fields().items() if spec.kind == MAP)


def pattern(path: Path) -> str:
    """The schema leaf a concrete path is an instance of: indices -> ``[]``, open-map keys -> ``*``."""
    text = re.sub(r"\[\d+\]", "[]", dotted(path))
    for open_map in OPEN_MAPS:
        text = re.sub(rf"^({re.escape(open_map)})\.[^.\[]+$", r"\1.*", text)
    return text


@lru_cache(maxsize=None)
def bases() -> dict[str, dict]:
    """(group=option) -> its config (predict mode), built once per session: the default and each
    hardware option composed by Hydra (their defaults lists pick sweeps and precisions); the
    model, parallel and precision options, plain YAML without defaults or interpolations
    (tests/config/test_config_zoo.py), swapped into the default."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    out = {}
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        for option in schema.group_options("hardware"):
            cfg = compose("config", overrides=[f"hardware={option}", "hardware.mode=predict"])
            out[f"hardware={option}"] = OmegaConf.to_container(cfg, resolve=True)
    default = out["hardware=cpu"]
    for group in ("model", "parallel", "precision"):
        for option in schema.group_options(group):
            loaded = OmegaConf.load(ROOT / "conf" / group / f"{option}.yaml")
            if "defaults" not in loaded:  # precision/default.yaml: the default itself
                section = OmegaConf.to_container(loaded, resolve=True)
                out[f"{group}={option}"] = {**copy.deepcopy(default), group: section}
    seeded = copy.deepcopy(out["parallel=pp"])  # the leaves no YAML sets
    seeded["parallel"]["layers_per_stage"] = [1, 1]
    seeded["tracking"]["tags"] = {"owner": "me"}
    out["seeded"] = seeded
    return out


def _walk(value: Any, path: Path, spec: Spec | None):
    """Concrete leaf paths under ``path`` following the schema (lists by index, maps by key)."""
    kind = spec.kind if spec is not None else None
    if kind == "items" and isinstance(value, list):
        yield path
        for i, item in enumerate(value):
            for key in ITEM_KEYS[pattern(path)]:
                yield from _walk(item.get(key), (*path, i, key), schema.fields().get(f"{pattern(path)}[].{key}"))
    elif kind == "list" and isinstance(value, list):
        yield path
        for i in range(len(value)):
            yield (*path, i)
    elif kind == "map" and isinstance(value, dict):
        yield path
        for key in value:
            yield (*path, key)
    else:
        yield path


@lru_cache(maxsize=None)
def targets() -> tuple[tuple[str, Path], ...]:
    """(base, concrete path) of every leaf of every option's section, and of the seeded base."""
    out = []
    fields = schema.fields()
    for name, cfg in bases().items():
        group = name.split("=")[0]
        sections = (group,) if group in GROUPS else ("parallel", "tracking")
        if name == "hardware=cpu":  # the sections no group chooses (run, tracking, band, ...)
            sections += tuple(s for s in schema.SECTIONS if s not in GROUPS and s not in sections)
        for section in sections:
            for key in specs(schema.SECTION_TYPES[section]):
                out += [(name, p) for p in _walk(cfg[section].get(key), (section, key), fields[f"{section}.{key}"])]
    return tuple(dict.fromkeys(out))


def spec_at(path: Path) -> Spec | None:
    return schema_leaves().get(pattern(path)) or schema.fields().get(pattern(path))


def with_value(base: str, path: Path, value: Any) -> dict:
    cfg = copy.deepcopy(bases()[base])
    node = cfg
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return cfg


def breaks_its_spec(spec: Spec | None, value: Any) -> bool:
    """An independent oracle: a value of the wrong type, not finite or out of range for its leaf."""
    if spec is None or value is None:
        return False
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec.kind == BOOL:
        return not isinstance(value, bool)
    if spec.kind == CHOICE:
        return value not in spec.choices
    if spec.kind in (INT, NUMBER):
        if (
            not number
            or (spec.kind == INT and not isinstance(value, int))
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            return True
        return (spec.low is not None and (value < spec.low or (spec.low_open and value == spec.low))) or (
            spec.high is not None and value > spec.high
        )
    if spec.kind == TEXT:
        return isinstance(value, (list, dict, bool)) or (isinstance(value, str) and not value.isprintable())
    return False


BOUNDED_BY_ONE = re.compile(
    r"^(tier1\.compute_efficiency|tier1\.bandwidth_efficiency(\..+)?|roofline\..+\.roof_share"
    r"|tier1\.allocation_ratio(\..+)?|tier1\.load_imbalance)$"
)
POSITIVE = re.compile(r"^(throughput\..+|step_time\.(median|p10|p90)_s)$")
NON_NEGATIVE = re.compile(r"^(memory\..+|work\..+|perf\..+|tier1\..+)$")


def check_outcome(base: str, path: Path, value: Any) -> str:
    """Refused with a good message, or predicted with a status; returns what happened."""
    cfg = with_value(base, path, value)
    where = dotted(path)
    try:
        rc = build_run_config(cfg)
    except ConfigError as error:
        message = str(error)
        assert "\n" not in message and error.valid, (where, value, message)
        assert len(message) < 2000, (where, message[:300])
        field = re.sub(r"\[\d+\]", "[]", error.field)
        known = {*schema.fields(), *schema_leaves(), *schema.SECTIONS, *(f"{p}[]" for p in ITEM_KEYS)}
        assert field in known or re.sub(r"\.[^.\[]+$", ".*", field) in known, (where, value, message)
        if breaks_its_spec(spec_at(path), value):
            assert error.field == where, (where, value, message)
        return "refused"
    if rc.hardware.mode != "predict" or not rc.hardware.backend:
        return "accepted"  # a measured run is not the fuzzer's to start
    from dabench.pipeline.job import execute_job, prepare  # what dabench.predict runs once Hydra has composed

    result = execute_job(prepare(cfg))
    assert isinstance(result.status, Status), (where, value)
    assert result.status not in (Status.CRASHED, Status.OOM), (where, value, result.reason[-1500:])
    if result.status is Status.OK:
        for name, number in result.metrics.items():
            if not isinstance(number, (int, float)):
                continue
            assert math.isfinite(number), (where, value, name, number)
            assert not POSITIVE.match(name) or number > 0, (where, value, name, number)
            assert not BOUNDED_BY_ONE.match(name) or 0 <= number <= 1 + 1e-6, (where, value, name, number)
            assert not NON_NEGATIVE.match(name) or number >= 0, (where, value, name, number)
    return result.status.value


def values_for(spec: Spec | None) -> st.SearchStrategy:
    """Nasty values for a leaf, with its boundaries and near-misses of its choices."""
    nasty = [
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=40),
        st.text(alphabet=st.characters(), min_size=1, max_size=300),
        st.sampled_from(
            [
                "../" * 8 + "etc/passwd",
                "~/.ssh/id_rsa",
                "/",
                "\\\\server\\share",
                "a/b/c",
                "\x00",
                "${oc.env:HOME}",
                "1e9",
                "inf",
                "-0",
                "0x10",
                "true",
                "null",
            ]
        ),
        st.lists(st.integers(min_value=-3, max_value=10), max_size=5),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    ]
    if spec is not None and spec.kind in (INT, NUMBER):
        edges = [b for b in (spec.low, spec.high) if b is not None]
        near = [e + d for e in edges for d in (-1, 0, 1)] + [e * f for e in edges for f in (0.999999, 1.000001)]
        nasty.append(st.sampled_from(near))
        if spec.low is not None and spec.high is not None:
            nasty.append(
                st.integers(min_value=int(spec.low), max_value=int(min(spec.high, 2**62)))
                if spec.kind == INT
                else st.floats(min_value=spec.low, max_value=spec.high)
            )
    if spec is not None and spec.choices:
        near_misses = [*(c.upper() for c in spec.choices), *(c + " " for c in spec.choices)]
        nasty.append(st.sampled_from([*spec.choices, *near_misses]))
    return st.one_of(nasty)


def _by_leaf() -> dict[str, list[tuple[str, Path]]]:
    out: dict[str, list[tuple[str, Path]]] = {}
    for base, path in targets():
        out.setdefault(pattern(path), []).append((base, path))
    return out


def test_the_fuzzed_leaves_are_every_leaf_of_the_schema():
    fuzzed = set(_by_leaf())
    every = set(schema_leaves()) | set(schema.fields())
    assert every <= fuzzed, f"schema leaves never fuzzed: {sorted(every - fuzzed)}"
    assert fuzzed <= every, f"fuzzed paths outside the schema: {sorted(fuzzed - every)}"
    hardware = {name.split("=")[1] for name in bases() if name.startswith("hardware=")}
    assert hardware == set(schema.group_options("hardware"))


def test_every_target_refuses_or_ends_with_a_status_on_the_nasty_values():
    """Long profile: every nasty value on every target. Fast: every nasty value on one target of
    each leaf, and a rotating quarter of them on every other target."""
    first = {pattern(path): (base, path) for base, path in reversed(targets())}
    for i, (base, path) in enumerate(targets()):
        every = PROFILE == "long" or first[pattern(path)] == (base, path)
        for j, value in enumerate(NASTY):
            if every or (i + j) % 4 == 0:
                check_outcome(base, path, value)


@pytest.mark.parametrize("leaf", sorted(set(schema_leaves()) | set(schema.fields())))
def test_fuzz_leaf(leaf):
    chosen = _by_leaf()[leaf]

    @FUZZ
    @given(target=st.sampled_from(chosen), value=values_for(spec_at(chosen[0][1])))
    def run(target, value):
        check_outcome(*target, value)

    run()


@pytest.mark.slow
def test_long_fuzz_profile():
    """The long profile in a child pytest (the slow suite): many more examples per leaf."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        __file__,
        "-k",
        "fuzz_leaf or nasty",
    ]
    done = subprocess.run(
        command, cwd=ROOT, env={**os.environ, "DABENCH_FUZZ": "long"}, capture_output=True, text=True, timeout=3600
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize(
    "argv",
    [
        ["run.batch_size=-1"],
        ["hardware.memory.0.capacity_bytes=-1e9"],
        ["parallel=pp", "parallel.placement='0 1x99999999999'"],
        ["parallel.replicas=abc"],
    ],
)
def test_command_line_refuses_in_one_line_with_exit_2(tmp_path, argv):
    done = subprocess.run(
        [sys.executable, "-m", "dabench", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("dabench: invalid config:"), lines[0]
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "outputs").exists()
