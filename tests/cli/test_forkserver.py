"""The tests' fork server (tests/forkserver.py) runs a command as ``python -m dabench`` would: the
same output, exit status, folder and environment; import-time differences go to a fresh process;
a timeout kills the child; a started one is signalled as a fresh process is (:class:`Forked`);
however a module ends, a fork ends with the status and output of ``python -m``."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests import forkserver
from tests.conftest import cli_env, default_sigint

SERVER_ENV = {"PATH": "/bin", "PYTHONUNBUFFERED": "1", "MLFLOW_TRACKING_URI": "sqlite:///a.db"}


def test_only_variables_read_at_run_time_may_differ():
    runtime = {"MLFLOW_TRACKING_URI": "sqlite:///b.db", "DABENCH_FAULT": "x", "TORCHINDUCTOR_CACHE_DIR": "/t"}
    runtime["MLFLOW_LOGGING_LEVEL"] = "WARNING"  # quiet.install's default: set before any import anyway
    assert forkserver.can_fork(["hardware=ipu"], {**SERVER_ENV, **runtime}, SERVER_ENV)
    import_time = {"PYTHONPATH": "/x", "MLFLOW_LOGGING_LEVEL": "INFO", "DABENCH_VERBOSE": "1", "TMPDIR": "/t"}
    for name, value in import_time.items():
        assert not forkserver.can_fork(["hardware=ipu"], {**SERVER_ENV, name: value}, SERVER_ENV), name
    assert not forkserver.can_fork(["hardware=ipu"], {k: v for k, v in SERVER_ENV.items() if k != "PATH"}, SERVER_ENV)
    for verbose in (["-v"], ["--verbose"], ["hydra.verbose=true"]):
        assert not forkserver.can_fork(["hardware=ipu", *verbose], SERVER_ENV, SERVER_ENV)


def _fresh(argv, cwd, env):
    return subprocess.run([sys.executable, "-m", "dabench", *argv], cwd=cwd, env=env, capture_output=True, text=True)


def _forked(argv, cwd, env, timeout=120):
    done = forkserver.SERVER.run(argv, cwd, env, timeout=timeout)
    ours, server = (forkserver._import_time_env(e) for e in (env, forkserver.SERVER._env))
    differ = {k: (ours.get(k), server.get(k)) for k in ours.keys() | server.keys() if ours.get(k) != server.get(k)}
    assert done is not None, f"not forked: this test's environment differs from the server's in {differ}"
    return done


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "argv,fault,code",
    [
        (["hardware=ipu", "parallel=pp", "hardware.mode=predict"], None, 0),
        (["compare", "0123", "4567"], None, 2),  # a subcommand that refuses in one line
        (["hardware=ipu", "hardware.mode=predict"], "write.artifacts:kill", -9),  # SIGKILLed mid-write
    ],
)
def test_a_fork_ends_as_a_fresh_process_does(tmp_path, argv, fault, code):
    runs = {}
    for how in ("fresh", "fork"):
        folder = tmp_path / how
        folder.mkdir()
        env = {**cli_env(folder), **({"DABENCH_FAULT": fault} if fault else {})}
        done = _fresh(argv, folder, env) if how == "fresh" else _forked(argv, folder, env)
        assert done.returncode == code, (how, done.stdout[-2000:], done.stderr[-2000:])
        runs[how] = done
    if code == 0:
        assert _last_line(runs["fork"].stdout) == _last_line(runs["fresh"].stdout)
    elif code > 0:
        said = {how: done.stderr.strip().replace(str(tmp_path / how), "<folder>") for how, done in runs.items()}
        assert said["fork"] == said["fresh"] and len(said["fork"].splitlines()) == 1, said
    entries = {how: sorted(p.name for p in (tmp_path / how).iterdir()) for how in runs}
    assert entries["fork"] == entries["fresh"], entries  # what the command wrote, in its own folder
    assert "Traceback" not in runs["fork"].stderr


def test_a_timeout_kills_the_child_and_the_server_goes_on(tmp_path):
    env = {**cli_env(tmp_path), "DABENCH_FAULT": "run_body:hold", "DABENCH_FAULT_READY": str(tmp_path / "ready")}
    with pytest.raises(subprocess.TimeoutExpired):
        _forked(["hardware=ipu", "hardware.mode=predict"], tmp_path, env, timeout=5)
    assert (tmp_path / "ready").exists()  # it was held, not slow to start
    done = _forked(["--cfg", "job"], tmp_path, cli_env(tmp_path), timeout=60)
    assert done.returncode == 0 and "model:" in done.stdout


def test_commands_in_another_home_fork_a_server_of_their_own_from_the_second_on(tmp_path, monkeypatch):
    """The first runs fresh; the second starts a server in that environment (the server's own
    imports see that HOME) and forks it, as does the third; they end as the fresh one did."""
    monkeypatch.setattr(forkserver, "_others", {})
    monkeypatch.setattr(forkserver, "_seen", forkserver.collections.Counter())
    env = {**cli_env(tmp_path), "HOME": str(tmp_path / "home")}
    argv = ["hardware=ipu", "hardware.mode=predict", "tracking.enabled=false"]
    assert not forkserver.can_fork(argv, env, forkserver.SERVER._env)
    lines = []
    try:
        for n in (1, 2, 3):
            done = forkserver.run(argv, tmp_path, env, timeout=120)
            assert done.returncode == 0, done.stderr[-2000:]
            lines.append(_last_line(done.stdout))
            assert len(forkserver._others) == (n > 1)
        (server,) = forkserver._others.values()
        assert server._count == 2 and forkserver._import_time_env(server._env) == forkserver._import_time_env(env)
    finally:
        for server in forkserver._others.values():
            server.stop()
    assert lines[0] == lines[1] == lines[2]


def test_a_started_fork_is_signalled_and_ends_as_a_fresh_process_does(tmp_path):
    """``forkserver.start``: held at its run's body, Ctrl-C'd, it ends 130 with the same one line as
    a fresh process; while it runs the server takes no other command (the next one runs fresh)."""
    said = {}
    for how in ("fresh", "fork"):
        folder = tmp_path / how
        folder.mkdir()
        ready = folder / "ready"
        env = {**cli_env(folder), "DABENCH_FAULT": "run_body:hold", "DABENCH_FAULT_READY": str(ready)}
        argv = ["hardware=ipu", "hardware.mode=predict"]
        if how == "fresh":
            proc = subprocess.Popen(
                [sys.executable, "-m", "dabench", *argv],
                cwd=folder,
                env=env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=default_sigint,
            )
        else:
            proc = forkserver.start(argv, folder, env)
            assert isinstance(proc, forkserver.Forked) and forkserver.SERVER.start(argv, folder, env) is None
        while not (ready.exists() and ready.read_text().strip()):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert int(ready.read_text().split()[0]) == proc.pid
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (how, err[-2000:])
        said[how] = re.sub(r"\b[0-9a-f]{32}\b", "<run id>", _last_line(err))
    assert said["fork"] == said["fresh"], said


def test_a_started_fork_past_its_wait_is_killed_and_the_server_goes_on(tmp_path):
    """wait(timeout) on a held fork raises TimeoutExpired and leaves it running; kill() ends it
    (-9), its output is still read, and the server forks the next command."""
    ready = tmp_path / "ready"
    env = {**cli_env(tmp_path), "DABENCH_FAULT": "run_body:hold", "DABENCH_FAULT_READY": str(ready)}
    proc = forkserver.start(["hardware=ipu", "hardware.mode=predict"], tmp_path, env)
    assert isinstance(proc, forkserver.Forked)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.5)
    assert proc.poll() is None
    proc.kill()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -9 and "Traceback" not in err
    proc.kill()  # ended: nothing to do
    done = _forked(["--cfg", "job"], tmp_path, cli_env(tmp_path), timeout=60)
    assert done.returncode == 0 and "model:" in done.stdout


ENDINGS = """import atexit, logging.handlers, sys, threading, time
how = sys.argv[1]
atexit.register(print, "exit function ran")
held = logging.handlers.MemoryHandler(100, target=logging.StreamHandler(sys.stdout))
logging.getLogger("ending").addHandler(held)
logging.getLogger("ending").warning("held until logging's own exit function")
threading.Thread(target=lambda: (time.sleep(0.3), print("thread joined"))).start()
print("partial line", end="")
if how == "code": sys.exit(3)
if how == "text": sys.exit("refused: a reason")
if how == "raise": raise ValueError("boom")
if how == "interrupt": raise KeyboardInterrupt
"""


@pytest.mark.parametrize("how,code", [("code", 3), ("text", 1), ("raise", 1), ("interrupt", -2), ("return", 0)])
def test_a_fork_exits_as_python_m_does(tmp_path, how, code):
    """However a module ends (an exit code, a message, an exception, Ctrl-C's exception, its end),
    a fork joins its threads, runs its exit functions (those of libraries the server imported too),
    flushes its output and ends with the status
    of ``python -m``, though it skips the interpreter's teardown."""
    (tmp_path / "ending.py").write_text(ENDINGS)
    env = cli_env(tmp_path)
    fresh = subprocess.run([sys.executable, "-m", "ending", how], cwd=tmp_path, env=env, capture_output=True, text=True)
    fork = forkserver.SERVER.run([how], tmp_path, env, timeout=60, module="ending")
    assert fork is not None
    assert fresh.returncode == fork.returncode == code
    assert fork.stdout == fresh.stdout and "thread joined" in fork.stdout and "exit function ran" in fork.stdout
    assert "held until logging's own exit function" in fork.stdout  # registered when the server imported logging
    assert _last_line(fork.stderr or "-") == _last_line(fresh.stderr or "-")
