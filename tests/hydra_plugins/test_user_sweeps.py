"""A user's own sweep: ``+sweeps=<name>`` finds ``sweeps/<name>.yaml`` in the launch directory or
on ``hydra.searchpath``; an unknown name says where it looked; editing the sweep file between two
runs of one study is refused with exit 2 naming what changed, never mixed into the study."""

from __future__ import annotations

import shlex

import optuna
import pytest

from dabench.tune.study import counts_toward_budget
from tests.conftest import run_dabench

pytestmark = pytest.mark.slow

SWEEP = """\
# @package _global_
defaults:
  - override /hydra/sweeper: dabench_optuna
  - override /hardware: ipu
  - override /default_sweep@_global_: null
hardware:
  mode: predict
  options:
    available_memory_proportion: {proportion}
run:
  plots: never
hydra:
  sweeper:
    sweep_name: my_ipu
    n_trials: {n_trials}
    params:
      run.batch_size: choice(1, 2, 4)
"""


def write_sweep(folder, proportion=0.15, n_trials=2):
    (folder / "sweeps").mkdir(parents=True, exist_ok=True)
    (folder / "sweeps" / "my_ipu.yaml").write_text(SWEEP.format(proportion=proportion, n_trials=n_trials))


def trials(folder) -> list:
    """The counted trials of the one study in ``folder``'s study storage."""
    storage = f"sqlite:///{folder / 'mlruns' / 'optuna.db'}"
    (name,) = optuna.get_all_study_names(storage)
    return [t for t in optuna.load_study(study_name=name, storage=storage).trials if counts_toward_budget(t)]


def test_a_sweep_in_the_launch_directory_runs_and_an_edit_is_refused(tmp_path):
    write_sweep(tmp_path)
    done = run_dabench("+sweeps=my_ipu", "-m", cwd=tmp_path)
    assert "best: trial" in done.stdout and len(trials(tmp_path)) == 2
    write_sweep(tmp_path, proportion=0.3, n_trials=3)  # the same study, another config
    refused = run_dabench("+sweeps=my_ipu", "-m", cwd=tmp_path, code=2)
    (line,) = [x for x in refused.stderr.splitlines() if x.startswith("dabench:")]
    assert "config.hardware.options.available_memory_proportion" in line and "study my_ipu-" in line
    assert len(trials(tmp_path)) == 2, "a trial of the edited sweep joined the study"


def test_a_sweep_on_hydra_searchpath_runs_from_anywhere_and_its_best_command_too(tmp_path):
    mine, elsewhere = tmp_path / "mine", tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_sweep(mine)
    searchpath = f"hydra.searchpath=[file://{mine}]"
    done = run_dabench("+sweeps=my_ipu", searchpath, "-m", cwd=elsewhere)
    assert len(trials(elsewhere)) == 2
    commands = [x.strip() for x in done.stdout.splitlines() if x.strip().startswith("python -m dabench ")]
    best = commands[0]  # then the same with hardware.mode=measure
    assert searchpath in shlex.split(best)
    run_dabench(*shlex.split(best)[3:], cwd=elsewhere)  # the printed command runs as it is


def test_an_unknown_sweep_names_where_it_looked(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_dabench("+sweeps=nope", f"hydra.searchpath=[file://{tmp_path}]", "-m", cwd=elsewhere, code=2)
    (line,) = done.stderr.strip().splitlines()
    assert "sweeps='nope': unknown sweeps option" in line and "ipu_deploy" in line
    assert f"looked in {tmp_path / 'sweeps'}, {elsewhere / 'sweeps'}, " in line
