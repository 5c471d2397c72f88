"""The PopTorch backend drives a recording fake ``poptorch`` (tests/vendors/fakes) through runner
isolation, so these tests check the calls dabench makes: placement per IPU, options, precision,
compile before the timed host calls, samples counted per host call, the profile export."""

from __future__ import annotations

import pytest
from vendor_helpers import run_config

from dabench.backends import get_backend
from dabench.backends.vendor import probe_sdk
from dabench.core.status import ConfigError, Status, UnsupportedError
from dabench.pipeline.execute import execute
from dabench.platforms.ipu.backend import PoptorchBackend
from dabench.platforms.ipu.runner import _classify_compile_error, begin_blocks

PIPELINE = {"strategy": "pp", "degree": 2, "layers_per_stage": [0, 2]}


def test_registered():
    assert get_backend("poptorch") is PoptorchBackend


def test_without_sdk_the_reason_says_how_to_point_at_one(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # no fakes on the path
    availability = PoptorchBackend.availability(run_config("ipu"))
    assert not availability.ok
    assert "PopTorch" in availability.reason and "not importable" in availability.reason
    assert "hardware.python=" in availability.reason and "Poplar SDK" in availability.reason
    missing = PoptorchBackend.availability(run_config("ipu", python="/opt/poplar/venv/bin/python"))
    assert "hardware.python=/opt/poplar/venv/bin/python does not exist" in missing.reason


def test_sdk_without_ipus_is_unavailable(fake_sdk, monkeypatch):
    monkeypatch.setenv("FAKE_SDK_BEHAVIOUR", "no_devices")
    probe_sdk.cache_clear()
    availability = PoptorchBackend.availability(run_config("ipu", python=fake_sdk.python))
    probe_sdk.cache_clear()
    assert not availability.ok and "IPU(s) are not available" in availability.reason
    assert fake_sdk("ipuHardwareIsAvailable")[0]["args"] == [1]


def test_graphcore_gpt2_layout_places_embedding_and_head_on_ipu0():
    config = {
        "model": {"n_layers": 12},
        "parallel": {"strategy": "pp", "degree": 4, "layers_per_stage": [0, 4, 4, 4], "head_on_last": False},
    }
    assert begin_blocks(config) == [("embedding", 0), ("block.0", 1), ("block.4", 2), ("block.8", 3), ("head", 0)]
    config["parallel"]["head_on_last"] = True
    assert begin_blocks(config)[-1] == ("head", 0)  # on IPUs the head stays on IPU 0 (Graphcore layout)
    config["parallel"] = {"strategy": "none"}
    assert begin_blocks(config) == [("embedding", 0)]  # one IPU: one block


@pytest.mark.slow
def test_pipelined_mixed_precision_run_drives_the_api(fake_sdk):
    rc = run_config(
        "ipu",
        python=fake_sdk.python,
        parallel=PIPELINE,
        options={
            "device_iterations": 3,
            "available_memory_proportion": 0.3,
            "runner_profile": True,
            "runner_ipu_model": True,
        },
        grad_accum=4,
    )
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    blocks = [(c["kwargs"]["user_id"], c["kwargs"]["ipu_id"]) for c in fake_sdk("BeginBlock")]
    assert blocks == [("embedding", 0), ("block.0", 1), ("head", 0)]
    settings = {c["call"]: c["args"] for c in fake_sdk()}
    assert settings["deviceIterations"] == [3]
    assert settings["Training.gradientAccumulation"] == [4]  # run.grad_accum
    assert settings["replicationFactor"] == [1]
    assert settings["setAvailableMemoryProportion"] == [{"IPU0": 0.3, "IPU1": 0.3}]
    assert settings["PipelinedExecution"] == ["AutoIncrement"]
    assert settings["Precision.setPartialsType"] == ["torch.float32"]  # half_partials: false (the YAML default)
    assert settings["useIpuModel"] == [True] and not fake_sdk("ipuHardwareIsAvailable")  # the simulator: no IPU check
    assert fake_sdk("trainingModel")[0]["kwargs"]["param_dtype"] == "torch.float16"  # fp16 weights on the IPU
    adamw = fake_sdk("optim.AdamW")[0]["kwargs"]
    assert adamw["accum_type"] == adamw["second_order_momentum_accum_type"] == "torch.float32"  # fp32 master state
    assert fake_sdk("DataLoader")[0]["kwargs"]["batch_size"] == 2  # the micro-batch
    # compile once, separately, before the warm-up + timed host calls
    sequence = [c["call"] for c in fake_sdk() if c["call"].startswith("trainingModel")]
    assert sequence == ["trainingModel", "trainingModel.compile"] + ["trainingModel.__call__"] * 3
    per_call = 2 * 3 * 4 * 1  # micro x device iterations x gradient accumulation x replicas
    assert fake_sdk("trainingModel.compile")[0]["args"] == [[[per_call, 16], [per_call, 16]]]
    profile = result.profile
    assert profile.samples_per_step == per_call and len(profile.step_times_s) == 2 and profile.chips == 2
    assert result.metrics["throughput.samples_per_s"] == pytest.approx(per_call / profile.median_step_s)
    assert result.metrics["compile.time_s"] >= 0
    # the PopVision export (fake pva: 2 IPUs x 4 tiles) feeds units, stages and balance
    assert fake_sdk("pva.openReport")[0]["args"][0].endswith("popvision/training/profile.pop")
    assert result.metrics["tier1.allocation_ratio.tiles"] == pytest.approx(6 / 8)
    assert [s.name for s in profile.subtasks] == ["ipu0", "ipu1"] and profile.tags["subtask_kind"] == "stage"
    # fake pva cycles: IPU0 2 x 1000, IPU1 2 x 3000 (Sync steps left out): LI = mean / max = 4000 / 6000
    assert result.metrics["tier1.load_imbalance"] == pytest.approx(4000 / 6000) and profile.bottleneck == "ipu1"
    assert any(a.endswith("popvision.json") for a in profile.artifacts)


@pytest.mark.slow
def test_data_parallel_fp16_replicates(fake_sdk):
    rc = run_config(
        "ipu",
        python=fake_sdk.python,
        precision="fp16",
        parallel={"strategy": "dp", "degree": 2},
        options={"runner_ipu_model": True, "half_partials": True},
    )
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    settings = {c["call"]: c["args"] for c in fake_sdk()}
    assert settings["replicationFactor"] == [2] and settings["Precision.setPartialsType"] == ["torch.float16"]
    assert "PipelinedExecution" not in settings and not fake_sdk("BeginBlock")[1:]
    adamw = fake_sdk("optim.AdamW")[0]["kwargs"]
    assert adamw["accum_type"] == "torch.float16" and adamw["second_order_momentum_accum_type"] == "torch.float32"
    assert result.profile.samples_per_step == 2 * 1 * 1 * 2 and result.profile.chips == 2


def test_compile_errors_are_classified():
    """Out-of-memory at compile is the paper's IPU capacity limit; anything else a compile error (the
    isolation tests check that a child-reported status becomes the run's status)."""
    assert _classify_compile_error(RuntimeError("Out of memory on tile 17")).status == "capacity"
    error = _classify_compile_error(RuntimeError("graph construction failed: unsupported op"))
    assert error.status == "compile_error" and "unsupported op" in error.reason


def test_refused_before_starting():
    backend = PoptorchBackend()
    with pytest.raises(UnsupportedError, match="tensor-parallel"):
        backend.check(run_config("ipu", parallel={"strategy": "tp", "degree": 2}))
    with pytest.raises(ConfigError, match="at least the 3 training pipeline stages"):
        backend.check(run_config("ipu", parallel={"strategy": "pp", "degree": 2}, grad_accum=2))
