"""The soak benchmark at CI size (benchmarks/soak.py --trials 20): 4 workers on one PostgreSQL
study and one mlflow server, one worker SIGKILLed and the server killed and restarted mid-way;
exactly 20 counted trials, 0 duplicate deployments, 1 parent, nothing RUNNING, every counted
trial recorded in MLflow. Slow: a real PostgreSQL, mlflow server and 4 dabench workers. The
4-worker study of 40 counted trials without duplicates is tests/scaleout/test_shared_study.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.scaleout.servers import why_no_postgres

pytestmark = pytest.mark.slow


def test_soak_20_trials_with_a_killed_worker_and_a_server_restart(tmp_path):
    reason = why_no_postgres()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "soak.py"), "--trials", "20", "--keep", str(tmp_path / "soak")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-3000:]
    assert lines[-1] == "trials_counted=20 duplicates=0 parents=1 running=0 missing_records=0", (
        done.stdout[-3000:] + done.stderr[-3000:]
    )
    assert done.returncode == 0
    assert any("worker 0 SIGKILLed" in line for line in lines) and any("server restarted" in line for line in lines)
