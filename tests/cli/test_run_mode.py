"""A run composes its config once: Hydra's mode-only composition is skipped where the command line
decides the mode (dabench/cli/run.py, ``_mode_from_flags``), and taken where it does not."""

from pathlib import Path

import yaml
from hydra._internal.hydra import Hydra

from dabench.cli.run import _mode_from_flags
from tests.conftest import ROOT


def test_no_shipped_config_sets_hydra_mode():
    """What lets the command line alone decide: no file of conf/ or sweeps/ sets ``hydra.mode``."""
    files = [*Path(ROOT, "conf").rglob("*.yaml"), *Path(ROOT, "sweeps").rglob("*.yaml")]
    assert len(files) > 20
    for path in files:
        data = yaml.safe_load(path.read_text()) or {}
        hydra = data.get("hydra") if isinstance(data, dict) else None
        assert not (isinstance(hydra, dict) and "mode" in hydra), path
        assert "@package hydra" not in path.read_text() or "mode:" not in path.read_text(), path


def test_hydras_mode_composition_is_skipped_only_where_the_command_line_decides():
    found = Hydra.get_mode
    for argv in (["hardware=ipu", "hardware.mode=predict"], ["model.n_layers=1,2", "-m"], ["+sweeps=x", "-m"]):
        with _mode_from_flags(argv):
            assert Hydra.get_mode(None, "config", argv) is None, argv
        assert Hydra.get_mode is found
    for argv in (["hydra.mode=MULTIRUN"], ["+sweeps=ipu_deploy"], ["-cn", "other"], ["--config-dir", "x"]):
        with _mode_from_flags(argv):
            assert Hydra.get_mode is found, argv


def test_a_hydra_mode_override_still_makes_a_multirun(run_cli, tmp_path):
    done = run_cli("hydra.mode=MULTIRUN", "hardware.mode=predict", "tracking.enabled=false", "model.n_layers=1,2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("dabench: ok | PREDICTED") == 2, done.stdout[-2000:]
