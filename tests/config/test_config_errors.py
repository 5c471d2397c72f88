"""Item 5: unknown keys, unknown group options and out-of-range values are refused before any
work, on one line naming field, value and what is valid (exit 2 on the command line)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from dabench.config import schema
from dabench.config.build import build_run_config
from dabench.config.check import check_section
from dabench.core.status import ConfigError
from tests.conftest import ROOT, composed


def refused(cfg) -> str:
    with pytest.raises(ConfigError) as info:
        build_run_config(cfg)
    message = str(info.value)
    assert "\n" not in message
    return message


def validate(cfg) -> None:
    """Keys and values of a composed config mapping; ConfigError on the first problem."""
    schema.check_keys(cfg)
    for section, cls in schema.SECTION_TYPES.items():
        if cfg.get(section) is not None:
            check_section(cls, cfg[section], section)


def test_every_shipped_config_passes_the_schema():
    for hardware in schema.group_options("hardware"):
        for parallel in schema.group_options("parallel"):
            validate(composed([f"hardware={hardware}", f"parallel={parallel}"]))
    for model in schema.group_options("model"):
        validate(composed([f"model={model}"]))
    for sweep in schema.group_options("sweeps"):
        validate(composed([f"+sweeps={sweep}"]))


@pytest.mark.parametrize(
    "override, expect",
    [
        ("+foo=1", "foo='1': unknown key"),
        ("+run.batch_sise=8", "did you mean run.batch_size?"),
        ("model.foo=1", "model.foo='1': unknown key"),
        ("hardware=tpu", "valid: " + ", ".join(schema.group_options("hardware"))),
        ("precision=fp64", "valid: bf16, default, fp16, fp32, fp8, mixed"),
        ("+sweeps=nope", "unknown sweeps option"),
        ("model=gpt2_smal", "did you mean gpt2_small?"),
        ("parallel=dp,zz", "unknown parallel option"),
    ],
)
def test_command_line_overrides_are_checked_before_hydra(override, expect):
    with pytest.raises(ConfigError, match=expect.replace("?", r"\?").replace("(", r"\(")):
        schema.check_override(override)


@pytest.mark.parametrize(
    "override",
    [
        "tracking.tags.owner=me",
        "+tracking.tags.x=1",
        "hardware.options.recompute=false",
        "model.n_layers=1,2,4",
        "hydra.run.dir=x",
        "hydra/launcher=basic",
    ],
)
def test_open_maps_and_hydra_keys_pass(override):
    schema.check_override(override)


def test_unknown_keys_in_the_composed_config():
    cfg = composed()
    cfg["run"]["batch_sise"] = 8
    assert "did you mean run.batch_size?" in refused(cfg)
    cfg = composed()
    cfg["foo"] = 1
    assert "foo=1: unknown key" in refused(cfg)
    cfg = composed(["hardware=ipu"])
    cfg["hardware"]["memory"][0]["capacity_byte"] = 1
    assert "did you mean hardware.memory[0].capacity_bytes?" in refused(cfg)
    cfg = composed()
    cfg["tracking"]["tags"] = {"anything": "goes"}
    build_run_config(cfg)


@pytest.mark.parametrize(
    "field, value, expect",
    [
        ("run.batch_size", 0, "must be >= 1"),
        ("run.batch_size", -4, "must be >= 1"),
        ("run.batch_size", 2.5, "must be an integer"),
        ("run.batch_size", "8", "must be an integer"),
        ("run.lr", math.nan, "must be a finite number"),
        ("run.lr", 0.0, "must be > 0"),
        ("model.hidden_size", 1 << 30, "<= 1048576"),
        ("parallel.timeout_s", math.inf, "finite"),
        ("model.n_layers", True, "must be an integer"),
        ("run.threads", 0, "must be >= 1"),
    ],
)
def test_values_are_checked_for_type_and_range(field, value, expect):
    cfg = composed()
    section, key = field.split(".")
    cfg[section][key] = value
    message = refused(cfg)
    assert message.startswith(f"invalid config: {field}=") and expect in message


def test_non_finite_hardware_numbers_are_refused():
    cfg = composed(["hardware=ipu"])
    cfg["hardware"]["links"][0]["bandwidth_Bps"] = math.nan
    assert "hardware.links[0].bandwidth_Bps=nan" in refused(cfg)


def _entry_points() -> list[list[str]]:
    """``python -m dabench`` and, where installed next to this interpreter, the ``dabench`` console script."""
    script = Path(sys.executable).with_name("dabench")
    return [[sys.executable, "-m", "dabench"]] + ([[str(script)]] if script.exists() else [])


@pytest.mark.parametrize("entry", _entry_points(), ids=lambda e: "console-script" if len(e) == 1 else "python-m")
@pytest.mark.parametrize("override", ["hardware=tpu", "+run.batch_sise=8", "model=gpt2_smal"])
def test_cli_refuses_in_one_line_with_exit_2(tmp_path, override, entry):
    done = subprocess.run(
        [*entry, override],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("dabench: invalid config:"), done.stderr
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("key", ["tracking.tags." + "k" * 251, "+" + "z" * 300, "hardware.options." + "o" * 260])
def test_an_overlong_key_is_refused_before_hydra_looks_it_up_as_a_file(key):
    """A 261-character tag key crashed Hydra's config lookup (OSError: file name too long)."""
    from dabench.config.schema import check_command_line

    with pytest.raises(ConfigError, match="a key part of at most 250 characters"):
        check_command_line([f"{key}=v"])


def test_an_unknown_arch_is_refused_naming_the_platforms(run_cli):
    for arch in ("foo", "tpu"):
        done = run_cli(f"hardware.arch={arch}", "hardware.mode=predict", code=2)
        assert f"hardware.arch='{arch}'" in done.stderr and "cpu, cuda, wse2, rdu, ipu" in done.stderr


@pytest.mark.parametrize(
    "text,problem",
    [("a: [1,\n", "not valid YAML at line 2"), ("- a\n- b\n", "not a YAML mapping"), ("`x`\n", "not valid YAML")],
)
def test_a_broken_user_sweep_is_one_line_and_exit_2(run_cli, tmp_path, text, problem):
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "mine.yaml").write_text(text)
    done = run_cli("+sweeps=mine", "-m", code=2)
    assert f"sweeps='mine': {tmp_path / 'sweeps' / 'mine.yaml'}: {problem}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("over", [["hardware.backend=bogus"], ["hardware=rdu", "hardware.backend=poptorch"]])
def test_a_backend_of_another_platform_is_refused(run_cli, over):
    done = run_cli(*over, "hardware.mode=predict", code=2)
    assert "hardware.backend=" in done.stderr and "one of" in done.stderr
