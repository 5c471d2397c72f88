"""A crashed, killed or hung rank fails the whole parallel job cleanly: a recorded run with
status crashed naming the failing rank, within the timeout, and no rank process left behind."""

import os
import sys
import time

import pytest
import torch
from mlflow.tracking import MlflowClient

from dabench.config.build import build_run_config
from dabench.core.status import CrashedError, Status
from dabench.distributed.run import run_ranks
from dabench.pipeline import execute as runner
from tests import forkserver
from tests.conftest import cli_env, composed
from tests.distributed.procs import ranks_of_launcher

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SHORT = ["run.warmup_steps=1", "run.timed_steps=3", "run.profile_subtasks=false"]


def fault(monkeypatch, kind: str, rank: int = 1, step: int = 2) -> None:
    monkeypatch.setenv("DABENCH_FAULT", f"rank:{rank}@{step}={kind}")


def test_killing_a_rank_mid_run_records_crashed_and_leaves_no_process(tmp_path):
    env = cli_env(tmp_path) | {"DABENCH_FAULT": "rank:1@2"}
    start = time.monotonic()
    job = forkserver.start(["parallel=dp", "parallel.degree=2", "parallel.timeout_s=60", *SHORT], tmp_path, env)
    output = "".join(job.communicate(timeout=120))
    assert time.monotonic() - start < 60, output[-2000:]
    assert ranks_of_launcher(job.pid) == []
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    assert run.data.tags["dabench.status"] == "crashed", output[-2000:]
    assert "rank 1 of 2 failed: killed by signal SIGKILL" in run.data.tags["dabench.reason"]


def test_a_raising_rank_becomes_a_crashed_result_with_its_error(monkeypatch):
    fault(monkeypatch, "raise", step=1)
    result = runner.execute(build_run_config(composed(["parallel=pp", "parallel.degree=2", *SHORT])))
    assert result.status is Status.CRASHED
    assert "rank 1 of 2 failed: RuntimeError: injected fault: rank 1 raised at step 1" in result.reason
    assert "Traceback" in result.reason
    assert ranks_of_launcher(os.getpid()) == []


def test_a_hung_rank_is_killed_at_the_timeout(monkeypatch):
    fault(monkeypatch, "hang", step=1)
    rc = build_run_config(composed(["parallel=tp", "parallel.degree=2", "parallel.timeout_s=10", *SHORT]))
    start = time.monotonic()
    with pytest.raises(CrashedError) as crashed:
        run_ranks(rc, torch.device("cpu"))
    assert 10 <= time.monotonic() - start < 20
    assert "still running after parallel.timeout_s=10 s (hung?)" in crashed.value.reason
    assert ranks_of_launcher(os.getpid()) == []
