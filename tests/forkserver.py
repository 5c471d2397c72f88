"""``python -m dabench <args>`` for the tests, as a fork of a warm interpreter.

A fresh ``python -m dabench`` spends most of a predicted run importing MLflow, SQLAlchemy, pandas
and Hydra. :class:`ForkServer` starts one interpreter per pytest process that imports them once
(after ``dabench.runtime.quiet.install``, as ``python -m dabench`` does), then forks it for each
command: the child takes the command's folder, environment, stdout and stderr, sets ``sys.argv``
and ``sys.path[0]`` as ``-m`` does, runs the ``dabench`` package's ``__main__`` (or another module:
the fault tests' recipes) and exits as the interpreter does (its threads joined, its exit functions
run, its output flushed) but without the teardown of the modules it inherited: the server froze them
out of the garbage collector (``gc.freeze``), since walking them would copy every page a child shares
with it. dabench's own modules are imported fresh by each child. :func:`run` waits for the command; :func:`start` hands
back a Popen-like :class:`Forked` for tests that signal it. The server also learns MLflow's schema
head once (a pure function of the installed migrations, read from ~130 scripts twice a command).

What differs from a fresh process is only what was decided at import time, so :func:`can_fork`
sends a command to a fresh process instead when its environment differs from the server's in a
variable read then (:data:`IMPORT_TIME_ENV`) or it asks for ``-v``; tests that check
import-time behaviour (third-party warnings on stderr, files made at import) pass ``fresh=True``.
A second command in the same other import-time environment (a test's own HOME, say) starts a
server in that environment and forks it from then on (:data:`OTHERS` such servers at most, the
oldest stopped first). ``DABENCH_TEST_FRESH=1`` runs every command fresh. See docs/reliability.md,
"CI's time".
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import gc
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from subprocess import PIPE
from typing import Mapping

ROOT = Path(__file__).resolve().parents[1]
#: what the server imports before its first fork (the import cost of a run; not dabench's modules)
PRELOAD = (
    "mlflow",
    "mlflow.tracking",
    "mlflow.store.tracking.sqlalchemy_store",
    "hydra",
    "omegaconf",
    "optuna",
    "pandas",
    "numpy",
    "torch",  # a measured run's import (3 s); importing it starts no thread, so forking after it is safe
    "torch._dynamo",  # what torch.profiler imports on its first use in a measured run (1 s); no thread either
    "matplotlib.figure",  # every figure dabench draws (a measured run's plots, report, a study's plots)
    "matplotlib.backends.backend_agg",
    "optuna.importance",  # a study's importance plot: scikit-learn and scipy.stats (1 s); no thread either
)
#: variables the interpreter's start, the preloaded libraries and quiet.install read: a command whose
#: value differs from the server's runs fresh (any other variable is read only by what the child
#: imports or runs itself, after it took the command's environment)
IMPORT_TIME_ENV = re.compile(
    r"(PYTHON|LC_|LANG|MLFLOW_|SQLALCHEMY|HYDRA_|OPTUNA|PANDAS|NPY_|OPENBLAS|OMP_|MKL_|KINETO_|MPL|SKLEARN_|SCIPY_)\w*"
    r"|PATH|HOME|TZ|TMPDIR|TEMP|TMP|DABENCH_VERBOSE"
)
#: read by MLflow when a run needs them, not at import
RUNTIME_ENV = re.compile(r"MLFLOW_TRACKING_URI|MLFLOW_HTTP_REQUEST_\w+")
VERBOSE = ("-v", "--verbose")


def serve() -> None:
    """The server's loop: one JSON request per line on stdin, ``{"pid": n}`` then
    ``{"returncode": n}`` per request on stdout. Ends when stdin closes."""
    import importlib

    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # the server's own output goes to its log, never into the reply pipe
    from dabench.runtime import quiet

    atexit.register(_end)  # before the libraries' own: a child runs theirs (logging's, MLflow's) too
    quiet.install([sys.executable])
    for name in PRELOAD:
        importlib.import_module(name)
    from mlflow.store.db import utils

    head = utils._get_latest_schema_revision()  # MLflow reads its ~130 migration scripts for it, twice a command
    utils._get_latest_schema_revision = lambda: head
    for module in [m for m in sys.modules if m == "dabench" or m.startswith("dabench.")]:
        del sys.modules[module]  # each child imports dabench as a fresh process would
    gc.collect()
    gc.freeze()  # a child's collections, and its exit's, skip what it inherited (else they copy every page of it)
    replies.write(json.dumps({"ready": os.getpid()}) + "\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            _child(request)  # does not return
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()


def _child(request: dict) -> None:
    """Become ``python -m <module> <argv>`` in the request's folder and environment; exits."""
    import importlib.util
    import runpy

    global _ENDING
    _ENDING = ending = {"code": 0}
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal starts it (conftest.default_sigint)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    sys.path[0] = os.getcwd()  # what -m puts first
    module = request["module"]
    spec = importlib.util.find_spec(module)
    main = importlib.util.find_spec(f"{module}.__main__") if spec.submodule_search_locations else spec
    sys.argv = [main.origin, *request["argv"]]  # as -m sets it
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        ending["code"] = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
        raise
    except KeyboardInterrupt:
        ending["code"] = None  # python -m ends by SIGINT, after its exit functions
        raise
    except BaseException:
        ending["code"] = 1
        raise
    sys.exit(0)  # the interpreter prints what ended it, joins the threads and runs the exit functions


#: in a child, how it ends: {"code": exit status, or None for SIGINT}; None in the server
_ENDING: dict | None = None


def _end() -> None:
    """A child's last exit function (the server registered it before any other): the interpreter's
    teardown after it would write to every page the child shares with its server (a copy of each:
    ~0.35 s), and does nothing a command's outcome depends on once its threads are joined, its exit
    functions run and its output flushed."""
    ending = _ENDING
    if ending is None:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if ending["code"] is None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(ending["code"] & 0xFF)


def _import_time_env(env: Mapping[str, str]) -> dict[str, str]:
    """What of ``env`` a run's imports see: quiet.install's defaults are set before them (unless
    verbose), so a variable set to its default there is the same as one unset."""
    from dabench.runtime.quiet import ENV_DEFAULTS

    seen = env if env.get("DABENCH_VERBOSE") == "1" else {**ENV_DEFAULTS, **env}
    return {k: v for k, v in seen.items() if IMPORT_TIME_ENV.fullmatch(k) and not RUNTIME_ENV.fullmatch(k)}


def can_fork(argv: list[str], env: Mapping[str, str], server_env: Mapping[str, str]) -> bool:
    """Whether ``argv`` in ``env`` runs the same as a fork of a server started in ``server_env``."""
    if os.environ.get("DABENCH_TEST_FRESH") == "1" or any(a in VERBOSE or a.startswith("hydra.verbose") for a in argv):
        return False
    return _import_time_env(env) == _import_time_env(server_env)


class ForkServer:
    """A warm server, started on first use, stopped at exit: one per pytest process in its own
    environment (created when conftest imports this module), and those of :func:`_server`."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._process: subprocess.Popen | None = None
        #: the environment the server starts in: this process's when it was created (before any test
        #: patched it), as conftest.cli_env hands it to a command; or the commands' own
        self._env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
        self._lock = threading.Lock()
        self._count = 0  # commands run
        self._log: Path | None = None  # the server's log and the commands' output, a temp folder made at start
        self._current: Forked | None = None  # the last command started (a test that failed may leave it running)

    def _start(self) -> None:
        self._log = Path(tempfile.mkdtemp(prefix="dabench-forkserver-"))
        self._process = subprocess.Popen(
            [sys.executable, "-c", "from tests.forkserver import serve; serve()"],
            cwd=ROOT,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self._log / "server.log", "w"),
            text=True,
        )
        atexit.register(self.stop)
        self._reply(timeout=120, key="ready")

    def stop(self) -> None:
        if self._current is not None:
            self._current.kill()  # one left running by a failed test would hold the server's exit
        if self._process and self._process.poll() is None:
            self._process.stdin.close()
            self._process.wait(timeout=30)
        if self._log is not None:
            shutil.rmtree(self._log, ignore_errors=True)

    def _reply(self, timeout: float, key: str) -> int | None:
        """The next reply's ``key``; None when ``timeout`` passes first."""
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        if not ready:
            return None
        line = self._process.stdout.readline()
        if not line:
            log = (self._log / "server.log").read_text()[-3000:]
            raise RuntimeError(f"the dabench fork server ended (exit {self._process.wait()}):\n{log}")
        return json.loads(line)[key]

    def start(self, argv: list[str], cwd: Path, env: Mapping[str, str], module: str = "dabench") -> Forked | None:
        """``python -m <module> <argv>`` forked and running; None when it must run fresh
        (:func:`can_fork`) or the server is busy (another thread's command, or one not yet ended)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if not can_fork(argv, env, self._env):
                self._lock.release()
                return None
            if self._process is None:
                self._start()
            self._count += 1
            out, err = self._log / f"{self._count}.out", self._log / f"{self._count}.err"
            for path in (out, err):
                path.touch(mode=0o600)  # the child writes them; Forked reads them as they grow
            request = {"module": module, "argv": list(argv), "cwd": str(cwd), "env": dict(env)}
            self._process.stdin.write(json.dumps({**request, "stdout": str(out), "stderr": str(err)}) + "\n")
            self._process.stdin.flush()
            pid = self._reply(timeout=30, key="pid")
            if pid is None:
                raise RuntimeError(f"the dabench fork server did not fork within 30 s (log: {self._log})")
        except BaseException:
            self._lock.release()
            raise
        self._current = Forked(self, pid, [sys.executable, "-m", module, *argv], out, err)
        return self._current

    def run(
        self, argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float, module: str = "dabench"
    ) -> subprocess.CompletedProcess | None:
        """``python -m <module> <argv>`` as a fork, run to its end; None as for :meth:`start`."""
        proc = self.start(argv, cwd, env, module)
        if proc is None:
            return None
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise subprocess.TimeoutExpired(proc.args, timeout, *proc.communicate(30)) from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, *proc.communicate())


class Forked:
    """A command a server forked, until it ends: what the tests use of a text ``subprocess.Popen``
    (pid, returncode, poll, wait, kill, communicate; stdout and stderr are its output files, read as
    they grow). It holds its server: until it ends, other commands run fresh."""

    def __init__(self, server: ForkServer, pid: int, args: list[str], out: Path, err: Path) -> None:
        self.pid, self.args, self.returncode = pid, args, None
        self._server, self._paths = server, (out, err)
        self.stdout, self.stderr = (open(path, errors="replace") for path in self._paths)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self._server._reply(timeout=timeout, key="returncode")
            if code is None:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self.returncode = code
            self._server._lock.release()
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it ended since
                os.kill(self.pid, signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """(stdout, stderr) once it has ended; the files are then removed."""
        self.wait(timeout)
        texts = (self.stdout.read(), self.stderr.read())
        for handle, path in zip((self.stdout, self.stderr), self._paths, strict=True):
            handle.close()
            path.unlink(missing_ok=True)
        return texts


SERVER = ForkServer()
OTHERS = 1  #: servers kept for other import-time environments (each holds the libraries' memory)
_others: dict[tuple, ForkServer] = {}
_seen: collections.Counter = collections.Counter()


def _server(argv: list[str], env: Mapping[str, str]) -> ForkServer:
    """:data:`SERVER`, or a server for ``env``'s import-time environment from its second command on."""
    if not can_fork(argv, env, SERVER._env) and can_fork(argv, env, env):
        key = tuple(sorted(_import_time_env(env).items()))
        _seen[key] += 1
        if key not in _others and _seen[key] >= 2:
            for old in list(_others)[: max(0, len(_others) - OTHERS + 1)]:
                if _others[old]._lock.acquire(blocking=False):  # (one in use by another thread is kept)
                    _others.pop(old).stop()
            if len(_others) < OTHERS:
                _others[key] = ForkServer(env)
        return _others.get(key, SERVER)
    return SERVER


def start(
    argv: list[str], cwd: Path, env: Mapping[str, str], module: str = "dabench", **popen
) -> subprocess.Popen | Forked:
    """``python -m <module> <argv>`` started, text output to pipes: a fork of a warm server where that
    runs the same (:func:`_server`), else a new process (``popen``: more of Popen's arguments)."""
    proc = _server(argv, env).start(argv, cwd, env, module)
    if proc is None:
        command = [sys.executable, "-m", module, *argv]
        proc = subprocess.Popen(command, cwd=cwd, env=dict(env), text=True, stdout=PIPE, stderr=PIPE, **popen)
    return proc


def run(
    argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float, fresh: bool = False, module: str = "dabench"
) -> subprocess.CompletedProcess:
    """``python -m <module> <argv>``: a fork of a warm server where that runs the same (:func:`_server`),
    else (or with ``fresh``) a new process; captured, text."""
    done = None if fresh else _server(argv, env).run(argv, cwd, env, timeout, module)
    if done is None:
        command = [sys.executable, "-m", module, *argv]
        done = subprocess.run(command, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout)
    return done
