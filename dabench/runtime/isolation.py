"""Run the execution side in a child process, possibly under another interpreter: ``python -m
<module> request.json result.json`` through :mod:`dabench.runtime.supervisor`; a non-ok status,
an out-of-memory, a timeout or no readable result becomes the matching DabenchError with the tail
of ``runner.log``. docs/vendors.md, "Runner isolation"."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from dabench.config.paths import BUNDLED
from dabench.core.status import (
    CompileError,
    CrashedError,
    DabenchError,
    OutOfMemory,
    RunTimeout,
    Status,
    UnsupportedError,
)
from dabench.runtime import supervisor

PROTOCOL = 1
#: the folder that holds the dabench package: a checkout's root, or site-packages of an installed wheel
REPO_ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=1)
def package_path() -> str:
    """A folder whose only import is this ``dabench`` package, for a child's PYTHONPATH (for a
    wheel a private link, not site-packages, whose torch would shadow a vendor interpreter's)."""
    if not BUNDLED:
        return str(REPO_ROOT)
    folder = Path(tempfile.mkdtemp(prefix="dabench-path-"))
    (folder / "dabench").symlink_to(REPO_ROOT / "dabench", target_is_directory=True)
    atexit.register(shutil.rmtree, folder, True)
    return str(folder)


def child_env(python: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment, dabench on PYTHONPATH, the interpreter's bin folder first on PATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_path(), env.get("PYTHONPATH", "")) if p)
    if python:
        bin_dir = str(Path(python).absolute().parent)
        env["PATH"] = os.pathsep.join(p for p in (bin_dir, env.get("PATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def error_for(status: str, reason: str) -> DabenchError:
    """The exception that carries a child-reported non-ok status."""
    for cls in (CompileError, OutOfMemory, UnsupportedError, CrashedError):
        if cls.status.value == status:
            return cls(reason)
    error = DabenchError(reason)
    try:
        error.status = Status(status)
    except ValueError:
        error = CrashedError(f"runner reported unknown status {status!r}: {reason}")
    return error


def run_child(
    module: str,
    request: dict[str, Any],
    workdir: Path,
    python: str | None = None,
    timeout_s: float = 3600.0,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The result dict of ``python -m module request.json result.json`` run in ``workdir``."""
    workdir = Path(workdir).absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    request_path, result_path, log_path = workdir / "request.json", workdir / "result.json", workdir / "runner.log"
    result_path.unlink(missing_ok=True)
    request = {"protocol": PROTOCOL, "workdir": str(workdir), **request}
    request_path.write_text(json.dumps(request, indent=1, default=str))
    interpreter = python or sys.executable
    command = [interpreter, "-m", module, str(request_path), str(result_path)]
    where = f"runner {module} under {interpreter}"
    try:
        ended = supervisor.run(command, log_path, timeout_s, cwd=workdir, env=child_env(python, env))
    except OSError as error:
        raise CrashedError(f"{where} could not start: {error}") from error
    if not ended.ok:
        hung = f"hung past runner_timeout_s={timeout_s:g} s and was killed"
        error, how = {
            supervisor.TIMEOUT: (RunTimeout, hung),
            supervisor.OOM: (OutOfMemory, ended.description),
        }.get(ended.status, (CrashedError, ended.description))
        raise error(f"{where} {how}; output tail ({log_path}):\n{ended.tail}")
    try:
        result = json.loads(result_path.read_text())
        status, reason = result["status"], result.get("reason", "")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CrashedError(
            f"{where} exited 0 but left no readable {result_path.name} ({error}); "
            f"output tail ({log_path}):\n{supervisor.tail(log_path)}"
        ) from None
    if status != Status.OK.value:
        raise error_for(status, reason or f"{where} reported {status}")
    result["runner_log"] = str(log_path)
    return result
