"""Shared fixtures: the repo's conf/ folder composed with Hydra, and an isolated MLflow store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


def composed(overrides: list[str] | None = None) -> dict:
    """The config `python -m dabench <overrides>` would run, as a plain dict."""
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("config", overrides=overrides or [])
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.fixture
def isolated_env(tmp_path, monkeypatch):
    """A temp launch dir with its own MLflow store and calibration cache dir shared per session."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)
    return tmp_path


def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for a `python -m dabench` subprocess writing to a temp MLflow store."""
    env = dict(os.environ)
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env.pop("DABENCH_PARENT_RUN_ID", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env
