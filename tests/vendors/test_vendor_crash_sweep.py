"""A runner killed mid-run is recorded as ``crashed`` and a sweep over it goes on: a Hydra multirun
through ``python -m dabench -m`` where the fake PopTorch SIGKILLs its own process when compiling
the batch-2 job, then the batch-4 job runs normally; both land in MLflow."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from vendor_helpers import FAKES, REPO


@pytest.mark.slow
def test_hydra_sweep_records_the_crash_and_continues(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {
        **os.environ,
        "PYTHONPATH": str(FAKES),
        "MLFLOW_TRACKING_URI": uri,
        "FAKE_SDK_LOG": str(tmp_path / "calls"),
        "FAKE_SDK_BEHAVIOUR": "kill_on_compile",
        "FAKE_SDK_BEHAVIOUR_BATCH": "2",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DABENCH_PARENT_RUN_ID", None)
    command = [
        sys.executable,
        "-m",
        "dabench",
        "-m",
        "hardware=ipu",
        "hardware.mode=measure",
        f"hardware.python={sys.executable}",
        "+hardware.options.runner_ipu_model=true",
        "run.batch_size=2,4",
        "run.warmup_steps=1",
        "run.timed_steps=2",
        "model.n_layers=1",
        "model.seq_len=16",
        "model.hidden_size=32",
        "model.n_heads=2",
        "model.vocab_size=64",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
    ]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": f"{REPO}{os.pathsep}{FAKES}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    jobs = {r.data.params.get("run.batch_size"): r for r in runs if "run.batch_size" in r.data.params}
    assert jobs["2"].data.tags["dabench.status"] == "crashed"
    assert "killed by signal SIGKILL" in jobs["2"].data.tags["dabench.reason"]
    assert jobs["4"].data.tags["dabench.status"] == "ok" and jobs["4"].data.tags["dabench.mode"] == "measure"
    assert jobs["4"].data.metrics["throughput.samples_per_s"] > 0
