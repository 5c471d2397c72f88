"""The runner protocol: JSON in, JSON out, and every way a child can fail becoming a status."""

from __future__ import annotations

import json
import os
import time

import pytest

from dabench.isolation.subprocess_runner import PROTOCOL, run_child
from dabench.status import CompileError, CrashedError, Status
from vendor_helpers import FAKES


@pytest.fixture
def child_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", str(FAKES))
    return tmp_path


def run_fake(workdir, behaviour, timeout_s=60.0):
    return run_child("fake_child", {"phase": "run", "behaviour": behaviour}, workdir, timeout_s=timeout_s)


def test_ok_round_trip(child_env):
    result = run_fake(child_env / "ok", "ok")
    assert result["status"] == "ok" and result["step_times_s"] == [0.5, 0.25] and result["samples_per_step"] == 8
    request = json.loads((child_env / "ok" / "request.json").read_text())
    assert request["protocol"] == PROTOCOL and request["workdir"] == str(child_env / "ok")
    assert "fake child starting: ok" in (child_env / "ok" / "runner.log").read_text()


def test_nonzero_exit_is_crashed_with_output_tail(child_env):
    with pytest.raises(CrashedError, match="exited with status 3") as info:
        run_fake(child_env / "exit", "exit_nonzero")
    assert "something went wrong in the SDK" in info.value.reason


def test_killed_child_is_crashed(child_env):
    with pytest.raises(CrashedError, match="killed by signal SIGKILL") as info:
        run_fake(child_env / "kill", "kill_self")
    assert info.value.status is Status.CRASHED
    assert "fake child starting: kill_self" in info.value.reason


def test_hung_child_and_its_process_group_are_killed(child_env):
    workdir = child_env / "hang"
    started = time.monotonic()
    with pytest.raises(CrashedError, match="hung past runner_timeout_s=2 s"):
        run_fake(workdir, "spawn_sleeper_and_hang", timeout_s=2.0)
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


@pytest.mark.parametrize("behaviour, message", [("garbled", "no readable result.json"),
                                                ("no_result", "no readable result.json")])
def test_missing_or_garbled_result_is_crashed(child_env, behaviour, message):
    with pytest.raises(CrashedError, match=message):
        run_fake(child_env / behaviour, behaviour)


def test_child_reported_statuses_map_to_errors(child_env):
    with pytest.raises(CompileError, match="the compiler said no"):
        run_fake(child_env / "compile", "report_compile_error")
    with pytest.raises(Exception) as info:
        run_fake(child_env / "capacity", "report_capacity")
    assert info.value.status is Status.CAPACITY and "SRAM" in info.value.reason


def test_missing_interpreter_is_crashed(child_env):
    with pytest.raises(CrashedError, match="could not start"):
        run_child("fake_child", {"behaviour": "ok"}, child_env / "nopython", python="/nonexistent/python")


def test_runner_common_main_reports_exceptions(tmp_path, monkeypatch):
    """dabench.vendors.common.main turns a raised RunnerError / exception into a result file."""
    from dabench.vendors.common import RunnerError, main

    request = tmp_path / "request.json"
    request.write_text(json.dumps({"protocol": PROTOCOL}))

    def unsupported(_):
        raise RunnerError("unsupported", "no such mode")

    def broken(_):
        raise ZeroDivisionError("boom")

    for run, status, text in ((unsupported, "unsupported", "no such mode"), (broken, "crashed", "ZeroDivisionError: boom")):
        out = tmp_path / f"{status}.json"
        assert main(run, ["x", str(request), str(out)]) == 0
        result = json.loads(out.read_text())
        assert result["status"] == status and text in result["reason"] and result["protocol"] == PROTOCOL
