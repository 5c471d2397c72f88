"""Item 4: pre-flight refuses, before any work and on one line per problem (field, value, fix),
what cannot work on this machine or with this store; exit 2 and nothing recorded."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dabench.config.build import build_run_config
from dabench.host.info import meminfo_bytes
from dabench.pipeline import preflight
from dabench.pipeline.preflight import (
    Problem,
    check_memory,
    check_ranks,
    check_store,
    check_study_storage,
    environment_problems,
    job_problems,
)
from tests.conftest import ROOT, composed


def rc_of(*overrides: str):
    return build_run_config(composed(list(overrides)))


def test_ranks_against_cores():
    rc = rc_of("parallel=dp", "parallel.degree=64")
    [problem] = check_ranks(rc, cores=2)
    assert problem.field == "parallel.degree" and "64 ranks on 2 CPU cores" in str(problem)
    assert "run.allow_oversubscribe=true" in problem.fix
    assert check_ranks(rc_of("parallel=dp", "parallel.degree=64", "run.allow_oversubscribe=true"), cores=2) == []
    assert check_ranks(rc_of("parallel=dp", "parallel.degree=2"), cores=2) == []
    assert check_ranks(rc_of("hardware=ipu", "parallel=dp", "parallel.degree=64"), cores=2) == []  # predicted


def test_memory_estimate_against_available():
    rc = rc_of("model.hidden_size=65536")
    [problem] = check_memory(rc, available=24 * 2**30)
    assert problem.field == "model.hidden_size" and "GiB is available" in problem.fix
    assert check_memory(rc_of(), available=24 * 2**30) == []
    assert check_memory(rc_of("model.hidden_size=65536", "hardware.mode=predict"), available=2**30) == []


def test_meminfo_is_read(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:    1000 kB\n")
    assert meminfo_bytes("MemAvailable", str(meminfo)) == 1000 * 1024
    assert meminfo_bytes("MemAvailable", str(tmp_path / "absent")) is None


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_unreachable_server_and_missing_driver_name_the_fix():
    port = _closed_port()
    [problem] = check_store(f"http://127.0.0.1:{port}", "tracking.uri", 2)
    assert "not reachable" in problem.fix
    [problem] = check_store(f"postgresql://bob:hunter22@127.0.0.1:{port}/db", "tracking.uri", 2)
    assert "hunter22" not in str(problem) and ("not reachable" in problem.fix or "dabench[postgres]" in problem.fix)
    [problem] = check_store(f"mysql+nosuchdriver://bob@127.0.0.1:{port}/db", "tracking.uri", 2)
    assert "nosuchdriver" in problem.fix and "not installed" in problem.fix


def test_sqlite_store_folder_and_file(tmp_path):
    assert check_store(f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}", "tracking.uri", 2) == []
    assert not (tmp_path / "new").exists()  # pre-flight creates nothing
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    [problem] = check_store(f"sqlite:///{not_a_folder / 'mlflow.db'}", "tracking.uri", 2)
    assert "is not a folder" in problem.fix
    [problem] = check_store("sqlite:////proc/no/such/mlflow.db", "tracking.uri", 2)
    assert "not writable" in problem.fix
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database" * 100)
    [problem] = check_store(f"sqlite:///{corrupt}", "tracking.uri", 2)
    assert "not a usable database" in problem.fix
    good = tmp_path / "good.db"
    sqlite3.connect(good).execute("create table t (x)").connection.close()
    assert check_study_storage(f"sqlite:///{good}") == []
    assert check_study_storage(None) == []
    assert "not a usable database" in check_study_storage(f"sqlite:///{corrupt}")[0].fix


def test_low_disk_space_is_refused(tmp_path):
    [problem] = preflight.check_writable_dir(tmp_path, "hydra.run.dir", str(tmp_path), min_free=2**62)
    assert "MiB free" in problem.fix


def test_problem_is_one_line():
    text = str(Problem("parallel.degree", 64, "a fix"))
    assert text == "pre-flight: parallel.degree=64: a fix"


def test_a_healthy_run_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert environment_problems(rc_of()) + job_problems(rc_of()) == []


def _cli(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "dabench", *overrides],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, field",
    [
        (("parallel=dp", "parallel.degree=64"), "parallel.degree=64"),
        (("model.hidden_size=65536",), "model.hidden_size=65536"),
        (("tracking.uri=postgresql://bob:hunter22@127.0.0.1:9/db",), "tracking.uri="),
    ],
)
def test_cli_refuses_before_any_work(tmp_path, overrides, field):
    if overrides[0].startswith("parallel=dp") and preflight.cpu_cores() >= 64:
        pytest.skip("this machine has 64 cores: 64 ranks fit")
    done = _cli(tmp_path, *overrides)
    assert done.returncode == 2, done.stdout + done.stderr
    problems = [line for line in done.stderr.splitlines() if line.startswith("dabench: pre-flight:")]
    assert len(problems) == 1 and field in problems[0], done.stderr
    assert "hunter22" not in done.stdout + done.stderr
    assert not (tmp_path / "mlruns").exists()  # nothing recorded


def test_tracking_calls_are_bounded_by_the_configured_timeout(monkeypatch):
    from dabench.tracking import store

    for key in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"):
        monkeypatch.setenv(key, "unset")  # restored (or removed) after the test
        monkeypatch.delenv(key)
    monkeypatch.setattr(store, "_USER_SET", frozenset())
    monkeypatch.setattr(store, "_timeout_s", store.DEFAULT_TIMEOUT_S)
    assert store.apply_client_timeouts(7) == 7
    import os

    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "7" and os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"
    assert store.with_connect_timeout("postgresql://h/db") == "postgresql://h/db?connect_timeout=7"
    assert store.with_connect_timeout("postgresql://h/db?connect_timeout=3") == "postgresql://h/db?connect_timeout=3"
    assert store.with_connect_timeout("sqlite:////x/mlflow.db") == "sqlite:////x/mlflow.db"


def test_in_a_sweep_a_job_that_does_not_fit_is_recorded_invalid_config_without_running(monkeypatch):
    from dabench.core.status import Status
    from dabench.pipeline import job

    def must_not_run(rc):
        raise AssertionError("the work started")

    monkeypatch.setattr(job, "execute", must_not_run)
    monkeypatch.setattr(preflight, "cpu_cores", lambda: 2)  # this machine's core count, wherever it runs
    result = job.execute_job(job.prepare(composed(["parallel=dp", "parallel.degree=64"])))
    assert result.status is Status.INVALID_CONFIG and "ranks on" in result.reason
