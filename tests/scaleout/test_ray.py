"""Ray (issue 13 item 6): a local Ray cluster (``ray start --head`` on 127.0.0.1, started here)
runs a 6-trial predict-mode study through ``hydra/launcher=dabench_ray``; every trial's outcome
(objective, status, mode) comes back through Hydra's JobReturn. Skipped, saying why, where
``pip install 'dabench[ray]'`` has not been run. Where this interpreter has no Ray but
``scripts/setup_ray_venv.sh`` made ``.venv-ray`` (Ray's pins conflict with .venv's), the slow suite
runs this file again in that venv, as one more slow test. Slow: a Ray start takes ~30 s here."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.conftest import ROOT
from tests.scaleout.servers import free_port
from tests.scaleout.workers import RDU_GRID, worker_env

pytestmark = pytest.mark.slow


def _ray_missing() -> str | None:
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None:
        return "Ray and hydra-ray-launcher are not installed (pip install 'dabench[ray]')"
    return None


RAY_VENV = ROOT / ".venv-ray" / "bin" / "python"


@pytest.mark.skipif(_ray_missing() is None, reason="this interpreter has Ray: the test below runs here directly")
def test_the_ray_test_in_the_ray_venv():
    """This file in .venv-ray's interpreter (with .venv's packages behind Ray's pins)."""
    if not RAY_VENV.exists():
        why = f"{RAY_VENV.relative_to(ROOT)} is missing (bash scripts/setup_ray_venv.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{why}; CI=true requires the Ray test")
        pytest.skip(why)
    done = subprocess.run(
        [str(RAY_VENV), "-m", "pytest", "-q", "-m", "slow", "-p", "no:cacheprovider", __file__],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.skipif(_ray_missing() is not None, reason=str(_ray_missing()))
def test_six_trials_through_a_local_ray_cluster(tmp_path):
    ray = str(Path(sys.executable).with_name("ray"))
    port = free_port()
    env = worker_env({"RAY_USAGE_STATS_ENABLED": "0"})
    started = subprocess.run(
        [
            ray,
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--object-store-memory=200000000",
            "--disable-usage-stats",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    try:
        sweep = subprocess.run(
            [
                sys.executable,
                "-m",
                "dabench",
                *RDU_GRID,
                "hydra.sweeper.n_trials=6",
                "hydra.sweeper.n_jobs=2",
                "hydra/launcher=dabench_ray",
                f"hydra.launcher.ray.init.address=127.0.0.1:{port}",
                "-m",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        subprocess.run([ray, "stop"], env=env, capture_output=True, timeout=120)
    assert sweep.returncode == 0, sweep.stdout[-4000:] + sweep.stderr[-4000:]
    assert "Ray Launcher is launching 2 jobs" in sweep.stderr + sweep.stdout
    study = optuna.load_study(
        study_name="rdu_deploy-gpt2_small", storage=f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}"
    )
    ran = [t for t in study.get_trials() if t.user_attrs.get("dabench.status") != "skipped"]
    assert len(ran) == 6 and all(t.state == TrialState.COMPLETE for t in ran)
    # status and mode came back with the objective (JobOutcome in the JobReturn), not from files
    assert {t.user_attrs["dabench.status"] for t in ran} == {"ok"}
    assert {t.user_attrs["dabench.mode"] for t in ran} == {"predict"}
    assert len({tuple(sorted(t.params.items())) for t in ran}) == 6
