"""The runner protocol: JSON in, JSON out, and every way a child can fail becoming a status."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from vendor_helpers import FAKES

from dabench.backends.vendor import probe_sdk
from dabench.core.status import CompileError, CrashedError, RunTimeout, Status
from dabench.runtime.isolation import PROTOCOL, child_env, run_child


@pytest.fixture
def fakes_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", str(FAKES))
    return tmp_path


def run_fake(workdir, behaviour, timeout_s=60.0):
    return run_child("fake_child", {"phase": "run", "behaviour": behaviour}, workdir, timeout_s=timeout_s)


def test_ok_round_trip(fakes_on_path):
    result = run_fake(fakes_on_path / "ok", "ok")
    assert result["status"] == "ok" and result["step_times_s"] == [0.5, 0.25] and result["samples_per_step"] == 8
    request = json.loads((fakes_on_path / "ok" / "request.json").read_text())
    assert request["protocol"] == PROTOCOL and request["workdir"] == str(fakes_on_path / "ok")
    assert "fake child starting: ok" in (fakes_on_path / "ok" / "runner.log").read_text()


def test_nonzero_exit_is_crashed_with_output_tail(fakes_on_path):
    with pytest.raises(CrashedError, match="exited with status 3") as info:
        run_fake(fakes_on_path / "exit", "exit_nonzero")
    assert "something went wrong in the SDK" in info.value.reason


def test_killed_child_is_crashed(fakes_on_path):
    with pytest.raises(CrashedError, match="killed by signal SIGKILL") as info:
        run_fake(fakes_on_path / "kill", "kill_self")
    assert info.value.status is Status.CRASHED
    assert "fake child starting: kill_self" in info.value.reason


def test_hung_child_and_its_process_group_are_killed(fakes_on_path):
    workdir = fakes_on_path / "hang"
    started = time.monotonic()
    with pytest.raises(RunTimeout, match="hung past runner_timeout_s=2 s") as info:
        run_fake(workdir, "spawn_sleeper_and_hang", timeout_s=2.0)
    assert info.value.status is Status.TIMEOUT
    assert time.monotonic() - started < 30
    grandchild = int((workdir / "grandchild.pid").read_text())
    for _ in range(50):  # the grandchild was in the killed process group
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild {grandchild} survived the timeout")


@pytest.mark.parametrize(
    "behaviour, message", [("garbled", "no readable result.json"), ("no_result", "no readable result.json")]
)
def test_missing_or_garbled_result_is_crashed(fakes_on_path, behaviour, message):
    with pytest.raises(CrashedError, match=message):
        run_fake(fakes_on_path / behaviour, behaviour)


def test_child_reported_statuses_map_to_errors(fakes_on_path):
    with pytest.raises(CompileError, match="the compiler said no"):
        run_fake(fakes_on_path / "compile", "report_compile_error")
    with pytest.raises(Exception) as info:
        run_fake(fakes_on_path / "capacity", "report_capacity")
    assert info.value.status is Status.CAPACITY and "SRAM" in info.value.reason


def test_missing_interpreter_is_crashed(fakes_on_path):
    with pytest.raises(CrashedError, match="could not start"):
        run_child("fake_child", {"behaviour": "ok"}, fakes_on_path / "nopython", python="/nonexistent/python")


def test_runner_common_main_reports_exceptions(tmp_path, monkeypatch):
    """dabench.vendors.child.main turns a raised RunnerError / exception into a result file."""
    from dabench.vendors.child import RunnerError, main

    request = tmp_path / "request.json"
    request.write_text(json.dumps({"protocol": PROTOCOL}))

    def unsupported(_):
        raise RunnerError("unsupported", "no such mode")

    def broken(_):
        raise ZeroDivisionError("boom")

    for run, status, text in (
        (unsupported, "unsupported", "no such mode"),
        (broken, "crashed", "ZeroDivisionError: boom"),
    ):
        out = tmp_path / f"{status}.json"
        assert main(run, ["x", str(request), str(out)]) == 0
        result = json.loads(out.read_text())
        assert result["status"] == status and text in result["reason"] and result["protocol"] == PROTOCOL


def _python38() -> str | None:
    candidates = sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.8*" / "bin" / "python3.8")))
    found = shutil.which("python3.8")
    for path in ([found] if found else []) + candidates:
        if (
            subprocess.run(
                [path, "-c", "import sys; assert sys.version_info[:2] == (3, 8)"], capture_output=True
            ).returncode
            == 0
        ):
            return path
    return None


def test_runner_side_imports_under_python_3_8():
    """Vendor SDK venvs run old Pythons (PopTorch 3.3 ships cp38 wheels): the runner modules must
    import there (torch is imported lazily, inside run()), and the SDK probe must work."""
    python = _python38()
    if python is None:
        pytest.skip("no Python 3.8 interpreter here")
    modules = [
        "dabench.vendors.child",
        "dabench.vendors.probe",
        "dabench.platforms.ipu.runner",
        "dabench.platforms.wse.runner",
        "dabench.platforms.rdu.runner",
        "dabench.platforms.ipu.export",
    ]
    done = subprocess.run(
        [python, "-c", "import " + ", ".join(modules)],
        capture_output=True,
        text=True,
        env=child_env(python),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert probe_sdk(python, "poptorch") == (False, "poptorch is not importable", "")


def test_relative_interpreter_paths_resolve_from_the_launch_dir(tmp_path, monkeypatch):
    from dabench.backends.vendor import resolve_interpreter

    monkeypatch.chdir(tmp_path)
    assert resolve_interpreter(".venv-x/bin/python") == str(tmp_path / ".venv-x" / "bin" / "python")
    assert resolve_interpreter("/opt/sdk/bin/python") == "/opt/sdk/bin/python"
    assert resolve_interpreter("sh") == shutil.which("sh")
    assert resolve_interpreter(None) is None
