"""Quiet by default: a predicted run, an IPU pp multirun and a measured run through the Python API
print no third-party warning on stderr (kineto's USDT lines and thread complaint, MLflow's INFO
lines, setuptools warnings; the default measured CLI run is checked by tests/cli/test_run.py); the
repeated auto-predict line is said once per process; -v brings the detail back."""

import os
import subprocess
import sys
from unittest.mock import patch

import pytest

from dabench.runtime.quiet import install, verbose_requested
from tests.conftest import QUIET_UNSET, noise, run_dabench

FAST = ["run.warmup_steps=1", "run.timed_steps=2"]


def dabench(tmp_path, *args):
    return run_dabench(*args, cwd=tmp_path, code=None, unset=QUIET_UNSET, fresh=True)


def test_verbose_is_minus_v_or_hydra_verbose_and_minus_v_leaves_the_command_line():
    assert verbose_requested(["-v"]) and verbose_requested(["hydra.verbose=true"])
    assert verbose_requested(["hydra.verbose=[dabench]"])
    assert not verbose_requested(["hydra.verbose=false", "model=tiny"])
    with patch.dict(os.environ):  # install() sets variables: none may reach the later tests' children
        os.environ.pop("DABENCH_VERBOSE", None)
        argv = ["dabench", "-v", "model=tiny"]
        assert install(argv) is True and argv == ["dabench", "model=tiny"]
        assert install(argv) is True  # called again (python -m dabench calls it twice): still verbose


@pytest.mark.slow
def test_minus_v_brings_the_warning_lines_back(tmp_path):
    loud = dabench(tmp_path, "-v", *FAST)
    assert loud.returncode == 0, loud.stderr[-3000:]
    assert any("USDT" in line for line in loud.stderr.splitlines())  # kineto's profiler lines, back with -v


@pytest.mark.slow
def test_a_measured_run_through_the_python_api_prints_no_profiler_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in QUIET_UNSET}
    code = f"import dabench; r = dabench.run({FAST!r}); print(r.status.value, r.metrics['throughput.samples_per_s'])"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.startswith("ok "), done.stdout + done.stderr[-3000:]
    assert noise(done.stderr) == [], done.stderr


@pytest.mark.slow
def test_a_predicted_run_and_an_ipu_pp_multirun_are_quiet_and_the_auto_line_is_said_once(tmp_path):
    done = dabench(tmp_path, "hardware=ipu", "hardware.mode=predict")
    assert done.returncode == 0, done.stderr[-3000:]
    assert noise(done.stderr) == [], done.stderr
    sweep = dabench(tmp_path, "hardware=ipu", "parallel=pp", "model.n_layers=4", "-m")
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    assert noise(sweep.stderr) == [], sweep.stderr
    output = sweep.stdout + sweep.stderr
    assert output.count("hardware.mode=auto on ipu: PREDICTED, not measured") == 1
    assert "multirun results:" in sweep.stdout


@pytest.mark.slow
def test_a_sweep_on_a_tracking_server_prints_no_mlflow_view_lines(tmp_path):
    """MLflow prints 'View run ... / View experiment ...' after every run on an http store."""
    from tests.scaleout.servers import mlflow_server

    with mlflow_server(f"sqlite:///{tmp_path / 'server.db'}") as server:
        done = run_dabench(
            "hardware=ipu",
            "hardware.mode=predict",
            "model.n_layers=1,2",
            "-m",
            cwd=tmp_path,
            env={"MLFLOW_TRACKING_URI": server.uri},
            unset=("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT",),
            fresh=True,
        )
    assert "PREDICTED" in done.stdout
    assert "View run" not in done.stdout and "View experiment" not in done.stdout, done.stdout
