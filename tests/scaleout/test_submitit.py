"""dabench's submitit launcher configs (issue 13 items 2 and 5): Slurm cannot run here, so the
study runs through ``hydra/launcher=dabench_submitit_local`` (submitit's local executor: each
trial its own process); the sweeper caps a batch at this machine's cores; the Slurm config
composes with dabench's defaults. Skipped without ``pip install 'dabench[slurm]'``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from tests.scaleout.workers import RDU_GRID, REPO, worker_env

MISSING = importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None
pytestmark = pytest.mark.skipif(
    MISSING, reason="hydra-submitit-launcher is not installed (pip install 'dabench[slurm]')"
)


def test_slurm_config_carries_dabench_defaults():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base=None):
        cfg = compose(
            "config",
            overrides=[
                "hydra/launcher=dabench_slurm",
                "hydra.launcher.partition=gpu",
                "hydra.launcher.gpus_per_task=1",
            ],
            return_hydra_config=True,
        )
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.partition, launcher.timeout_min, launcher.cpus_per_task, launcher.gpus_per_task) == (
        "gpu",
        60,
        2,
        1,
    )


@pytest.mark.slow
def test_study_through_submitit_local_never_oversubscribes(tmp_path):
    cores = len(os.sched_getaffinity(0))
    sweep = subprocess.run(
        [
            sys.executable,
            "-m",
            "dabench",
            *RDU_GRID,
            "hydra.sweeper.n_trials=3",
            f"hydra.sweeper.n_jobs={cores + 2}",
            "hydra/launcher=dabench_submitit_local",
            "-m",
        ],
        cwd=tmp_path,
        env=worker_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = sweep.stdout + sweep.stderr
    assert sweep.returncode == 0, out[-4000:]
    assert f"n_jobs={cores + 2} capped at {cores}" in out
    study = optuna.load_study(
        study_name="rdu_deploy-gpt2_small", storage=f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}"
    )
    ran = [t for t in study.get_trials() if t.user_attrs.get("dabench.status") != "skipped"]
    assert len(ran) == 3 and all(t.state == TrialState.COMPLETE for t in ran)
    assert {t.user_attrs["dabench.mode"] for t in ran} == {"predict"}
    assert list(tmp_path.glob("multirun/*/*/.submitit")), "the jobs ran through submitit"
