"""The SambaFlow backend drives a recording fake ``sambaflow`` (tests/vendors/fakes): a compile
phase with the documented app flags, a run phase timing ``samba.session.run``, and the compile
folder parsed into PCU/PMU allocation and section-stage balance."""

from __future__ import annotations

import dataclasses

import pytest
from vendor_helpers import run_config

from dabench.backends import get_backend
from dabench.core.status import Status, UnsupportedError
from dabench.pipeline.execute import execute
from dabench.platforms.rdu.backend import SambaflowBackend
from dabench.platforms.rdu.runner import compile_args
from dabench.vendors.child import RunnerError


def test_registered_and_unavailable_without_sdk(monkeypatch, tmp_path):
    assert get_backend("sambaflow") is SambaflowBackend
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    availability = SambaflowBackend.availability(run_config("rdu"))
    assert not availability.ok and "SambaFlow" in availability.reason and "hardware.python=" in availability.reason


@pytest.mark.slow
def test_compile_then_run_drives_the_api(fake_sdk):
    rc = run_config("rdu", python=fake_sdk.python, precision="bf16", options={"compile_mode": "o3", "tiles": 4})
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    argv = [c["kwargs"]["argv"] for c in fake_sdk("parse_app_args")]
    assert argv[0][:3] == ["compile", "-b", "2"] and "-o3" in argv[0]
    assert argv[0][argv[0].index("--num-tiles") + 1] == "4"
    assert argv[1][0] == "run" and argv[1][2].endswith(".pef")  # the compiled PEF is what runs
    compiled = fake_sdk("session.compile")[0]["kwargs"]
    assert compiled["input_shapes"] == [[2, 16], [2, 16]]  # batch fixed at compile time
    assert compiled["config_dict"]["optim_level"] == "o3" and compiled["pef_metadata"]["batch_size"] == 2
    assert [c["kwargs"]["name"] for c in fake_sdk("randint")] == ["ids", "targets"] * 2
    assert all(c["kwargs"]["batch_dim"] == 0 for c in fake_sdk("randint"))
    assert fake_sdk("trace_graph")[0]["kwargs"]["pef"] == argv[1][2]
    runs = fake_sdk("session.run")
    assert len(runs) == 3 and runs[0]["kwargs"]["hyperparam_dict"] == {"lr": 1e-4}  # 1 warm-up + 2 timed
    assert len(fake_sdk("to_torch")) == 3 and fake_sdk("session.to_cpu")
    profile = result.profile
    assert profile.samples_per_step == 2 and len(profile.step_times_s) == 2
    assert result.metrics["compile.time_s"] >= 0 and result.metrics["rdu.session_run_s"] > 0
    # the fake compiler's folder: sections of 10 and 20 PCUs (of 640), stages 100/300 and 200/200 cycles
    assert result.metrics["tier1.allocation_ratio.pcus"] == pytest.approx(15 / 640)
    assert result.metrics["tier1.load_imbalance"] == pytest.approx((200 + 200) / (300 + 200))
    assert profile.bottleneck == "section0.stage1" and profile.tags["subtask_kind"] == "section_stage"
    assert any(a.endswith("utilization_report.json") for a in profile.artifacts)
    assert any(a.endswith("compile/runner.log") for a in profile.artifacts)


@pytest.mark.slow
def test_compile_failure_is_recorded(fake_sdk, monkeypatch):
    monkeypatch.setenv("FAKE_SDK_BEHAVIOUR", "fail_compile")
    result = execute(run_config("rdu", python=fake_sdk.python, precision="bf16"))
    assert result.status is Status.COMPILE_ERROR and "Unsupported operator" in result.reason
    assert not fake_sdk("session.run")


def test_compile_flags_for_tensor_parallel_and_mixed_precision():
    rc = run_config("rdu", precision="mixed", parallel={"strategy": "tp", "degree": 2}).to_dict()
    args = compile_args(rc, "/out", "pef")
    assert args[args.index("--n-chips") + 1] == "2" and args[args.index("--tensor-parallel") + 1] == "weight"
    assert args[args.index("--enable-mixed-precision-ops") + 1 :][:2] == ["gemm", "softmax"]
    assert "-o1" in args  # conf/hardware/rdu.yaml's compile_mode
    rc["hardware"]["options"]["compile_mode"] = "o2"
    with pytest.raises(RunnerError, match="compile_mode='o2'"):
        compile_args(rc, "/out", "pef")


def test_refused_before_starting():
    fp16 = dataclasses.replace(run_config("rdu"), precision=run_config("ipu", precision="fp16").precision)
    with pytest.raises(UnsupportedError, match="fp16"):
        SambaflowBackend().check(fp16)
    with pytest.raises(UnsupportedError, match="mpirun"):
        SambaflowBackend().check(run_config("rdu", parallel={"strategy": "dp", "degree": 2}))
