"""Run the execution side in a child process, possibly under another interpreter.

Protocol (version :data:`PROTOCOL`), all JSON files in a per-run work folder:

- The orchestrator writes ``request.json``: ``{"protocol", "phase", "run_config": RunConfig as a
  dict, "workdir"}`` and starts ``[python, -m, <module>, request.json, result.json]`` in its own
  process group, with the repository root on PYTHONPATH (the child imports only
  ``dabench.vendors.*`` and ``dabench.workload.model``, which need torch and the stdlib) and the
  interpreter's ``bin`` folder first on PATH (vendor tools live there, e.g. cstorch's
  ``torch-cirh-opt``). stdout and stderr go to ``runner.log``.
- The child writes ``result.json``: ``{"protocol", "status", "reason", ...}`` where status is a
  :class:`~dabench.core.status.Status` value; for ``ok`` it adds step times and vendor artifacts.
- The child is started, timed out, killed (its whole process group) and classified by
  :mod:`dabench.runtime.supervisor`. A child that runs out of memory (a MemoryError in its output, or the
  kernel's OOM killer) becomes :class:`~dabench.core.status.OutOfMemory`; one that exits non-zero,
  dies by a signal, outlives ``timeout_s`` or leaves no readable result becomes
  :class:`~dabench.core.status.CrashedError` with the tail of ``runner.log``. A child-reported status
  other than ok becomes the matching error.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from dabench.runtime import supervisor
from dabench.core.status import (CompileError, CrashedError, DabenchError, OutOfMemory, RunTimeout, Status,
                            UnsupportedError)


PROTOCOL = 1
REPO_ROOT = Path(__file__).resolve().parents[2]
TAIL_CHARS = 4000


def child_env(python: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: the parent's, plus the repo root on PYTHONPATH and the
    interpreter's bin folder first on PATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    if python:
        bin_dir = str(Path(python).absolute().parent)
        env["PATH"] = os.pathsep.join(p for p in (bin_dir, env.get("PATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def error_for(status: str, reason: str) -> DabenchError:
    """The exception that carries a child-reported non-ok status."""
    classes = {Status.COMPILE_ERROR.value: CompileError, Status.OOM.value: OutOfMemory,
               Status.UNSUPPORTED.value: UnsupportedError, Status.CRASHED.value: CrashedError}
    if status in classes:
        return classes[status](reason)
    error = DabenchError(reason)
    try:
        error.status = Status(status)  # capacity, invalid_config: no byte counts / field from the child
    except ValueError:
        error = CrashedError(f"runner reported unknown status {status!r}: {reason}")
    return error


def run_child(module: str, request: dict[str, Any], workdir: Path, python: str | None = None,
              timeout_s: float = 3600.0, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python -m module request.json result.json`` in ``workdir``; return the result dict
    of an ok run, raise the matching DabenchError otherwise (see module doc)."""
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
        ended = supervisor.run(command, log_path, timeout_s, cwd=workdir, env=child_env(python, env),
                               tail_chars=TAIL_CHARS)
    except OSError as error:
        raise CrashedError(f"{where} could not start: {error}") from error
    if ended.status == supervisor.TIMEOUT:
        raise RunTimeout(f"{where} hung past runner_timeout_s={timeout_s:g} s and was killed; "
                           f"output tail ({log_path}):\n{ended.tail}")
    if ended.status == supervisor.OOM:
        raise OutOfMemory(f"{where} {ended.description}; output tail ({log_path}):\n{ended.tail}")
    if not ended.ok:
        raise CrashedError(f"{where} {ended.description}; output tail ({log_path}):\n{ended.tail}")
    try:
        result = json.loads(result_path.read_text())
        status, reason = result["status"], result.get("reason", "")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CrashedError(f"{where} exited 0 but left no readable {result_path.name} ({error}); "
                           f"output tail ({log_path}):\n{supervisor.tail(log_path)}") from None
    if status != Status.OK.value:
        raise error_for(status, reason or f"{where} reported {status}")
    result["runner_log"] = str(log_path)
    return result
