"""Build RunConfigs for the analytical models straight from the shipped YAML (no Hydra, fast)."""

from __future__ import annotations

from omegaconf import OmegaConf

from dabench import predictor
from dabench.config.build import build_run_config
from dabench.findings.registry import config
from tests.conftest import CONF


def load(group: str, name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(CONF / group / f"{name}.yaml"), resolve=False)


def run_config(
    hardware: str,
    model: str = "gpt2_small",
    precision: str = "mixed",
    parallel: str = "none",
    batch_size: int = 4,
    grad_accum: int = 1,
    options: dict | None = None,
    hw: dict | None = None,
    model_over: dict | None = None,
    **parallel_over,
):
    """The RunConfig of :func:`dabench.findings.registry.config`'s mapping (conf/ groups, then these changes)."""
    cfg = config(hardware, model, precision, parallel, batch_size, grad_accum, options, model_over, hw, **parallel_over)
    return build_run_config(cfg)


def predict(rc):
    """(profile, metrics) of a full prediction, through the one predictor (dabench.predictor)."""
    prediction = predictor.predict(rc)
    return prediction.profile, prediction.metrics
