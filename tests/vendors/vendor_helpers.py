"""Helpers for the vendor tests: paths and RunConfigs."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.config.build import build_run_config

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
FAKES = HERE / "fakes"
REPO = HERE.parent.parent
SHARED = REPO.parent / "shared" / "fixtures"

# skipped with a reason where ../shared/fixtures is absent, a failure under CI=true (tests/conftest.py)
requires_shared = pytest.mark.usefixtures("shared_fixtures")

MODEL = {"name": "tiny", "n_layers": 2, "hidden_size": 32, "n_heads": 2, "seq_len": 16, "vocab_size": 64}


def run_config(
    hardware: str,
    backend: str | None = None,
    precision: str = "mixed",
    parallel: dict | None = None,
    options: dict | None = None,
    python: str | None = None,
    **run,
):
    """A RunConfig on conf/hardware/<hardware>.yaml (kept as-is apart from the overrides)."""
    from omegaconf import OmegaConf

    spec = OmegaConf.load(REPO / "conf" / "hardware" / f"{hardware}.yaml")
    spec.pop("defaults", None)  # the Hydra defaults list (default sweeps) is not part of the spec
    hw = OmegaConf.to_container(spec, resolve=True)
    hw["mode"] = "measure"
    if backend:
        hw["backend"] = backend
    hw["python"] = python
    hw["options"] = {**(hw.get("options") or {}), **(options or {})}
    precisions = {
        "fp32": ("fp32", "fp32", False),
        "fp16": ("fp16", "fp16", False),
        "bf16": ("bf16", "bf16", False),
        "mixed": ("fp32", "fp16" if hardware == "ipu" else "bf16", True),
    }
    param, compute, autocast = precisions[precision]
    settings = {"batch_size": 2, "warmup_steps": 1, "timed_steps": 2, "profile_subtasks": False, **run}
    return build_run_config(
        {
            "model": MODEL,
            "hardware": hw,
            "parallel": parallel or {"strategy": "none"},
            "precision": {"name": precision, "param_dtype": param, "compute_dtype": compute, "autocast": autocast},
            "run": settings,
            "tracking": {"enabled": False},
        }
    )
