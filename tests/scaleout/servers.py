"""A throwaway PostgreSQL and a real ``mlflow server`` backed by it, for the scale-out tests and
benchmarks/scale_out.py.

- PostgreSQL: Debian's ``postgresql`` package (``apt-get install -y postgresql``); ``initdb`` and
  ``pg_ctl`` from /usr/lib/postgresql/<version>/bin, run as the ``postgres`` user when we are root
  (initdb refuses root), on a free port of 127.0.0.1 with its data and socket under a temp folder.
  Two databases: ``optuna`` (the study store) and ``mlflow`` (the tracking store).
- MLflow: ``mlflow server --backend-store-uri postgresql://.../mlflow --artifacts-destination
  <folder> --host 127.0.0.1 --port <free> --workers 1`` with MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false.

Both are stopped (and their folders removed) when the context managers exit.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

USER = "dabench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def why_no_postgres() -> str | None:
    """None when a throwaway PostgreSQL can start here, else why not."""
    if pg_bin() is None:
        return "PostgreSQL is not installed (apt-get install -y postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run initdb as"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg 3 is not installed (pip install 'dabench[postgres]')"
    return None


def _as_postgres(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


@dataclass
class Postgres:
    port: int
    folder: Path

    def url(self, database: str) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"


@contextlib.contextmanager
def postgres(databases: tuple[str, ...] = ("optuna", "mlflow")) -> Iterator[Postgres]:
    """Start a throwaway PostgreSQL (see module docstring); yields it; stops it at exit."""
    bin_dir = pg_bin()
    assert bin_dir is not None, why_no_postgres()
    folder = Path(tempfile.mkdtemp(prefix="dabench-pg-"))
    data = folder / "data"
    port = free_port()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    os.chmod(folder, 0o755)
    started = False
    try:
        _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-U", USER, "-A", "trust", "-E", "UTF8"])
        _as_postgres(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(folder / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off",
                "start",
            ]
        )
        started = True
        for name in databases:
            _as_postgres([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", USER, name])
        yield Postgres(port, folder)
    finally:
        if started:
            with contextlib.suppress(subprocess.CalledProcessError):
                _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class MlflowServer:
    uri: str
    process: subprocess.Popen
    log: Path


def start_mlflow(backend_uri: str, port: int, artifacts: Path, log: Path, timeout_s: float = 180.0) -> subprocess.Popen:
    """``mlflow server`` on 127.0.0.1:``port`` in its own process group (one worker, no job
    runner), its output appended to ``log``; returned once /health answers."""
    mlflow = Path(sys.executable).with_name("mlflow")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    command = [str(mlflow), "server", "--backend-store-uri", backend_uri, "--artifacts-destination", artifacts.as_uri()]
    command += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    with open(log, "a") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if answer.status == 200:
                    return process
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            if process.poll() is None:
                os.killpg(process.pid, 9)
            raise RuntimeError(f"mlflow server did not start: {log.read_text()[-3000:]}")
        time.sleep(0.5)


@contextlib.contextmanager
def mlflow_server(backend_uri: str, timeout_s: float = 180.0) -> Iterator[MlflowServer]:
    """``mlflow server`` on 127.0.0.1 (see module docstring); yields it once /health answers."""
    folder = Path(tempfile.mkdtemp(prefix="dabench-mlflow-"))
    port = free_port()
    log = folder / "server.log"
    process = start_mlflow(backend_uri, port, folder / "artifacts", log, timeout_s)
    try:
        yield MlflowServer(f"http://127.0.0.1:{port}", process, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
