"""The result check (dabench.metrics.checks): non-finite -> diverged, a broken bound ->
invalid_result, never clamped."""

import math

import pytest

from dabench.core.status import Status
from dabench.metrics.checks import check_result, roofline_violations
from dabench.metrics.roofline import point

GOOD = {
    "throughput.samples_per_s": 100.0,
    "step_time.median_s": 0.04,
    "tier1.compute_efficiency": 0.4,
    "tier1.bandwidth_efficiency.dram": 0.2,
    "roofline.step.roof_share": 0.4,
    "tier1.allocation_ratio": 1.0,
    "tier2.scaling_efficiency": 1.05,
    "predict.rel_error.samples_per_s": -0.3,
}


def test_a_sound_result_passes():
    assert check_result(GOOD) is None
    assert check_result({**GOOD, "tier1.compute_efficiency": 1.0 + 1e-9}) is None  # float rounding


@pytest.mark.parametrize("name", ["throughput.samples_per_s", "tier1.compute_efficiency", "loss.final"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_is_diverged(name, value):
    failure = check_result({**GOOD, name: value})
    assert failure.status is Status.DIVERGED
    assert name in failure.reason


def test_non_finite_loss_argument_is_diverged():
    assert check_result(GOOD, loss=math.nan).status is Status.DIVERGED


@pytest.mark.parametrize(
    "name",
    [
        "tier1.compute_efficiency",
        "tier1.bandwidth_efficiency.dram",
        "roofline.step.roof_share",
        "predict.tier1.compute_efficiency",
        "tier1.allocation_ratio.cores",
        "tier1.load_imbalance",
    ],
)
def test_efficiency_above_one_is_invalid_with_the_value(name):
    metrics = {**GOOD, name: 2.24}
    failure = check_result(metrics)
    assert failure.status is Status.INVALID_RESULT
    assert f"{name}=2.24" in failure.reason
    assert metrics[name] == 2.24  # never clamped


def test_negative_time_is_invalid():
    assert check_result({**GOOD, "step_time.median_s": -1.0}).status is Status.INVALID_RESULT


def test_non_finite_wins_over_bounds():
    assert check_result({**GOOD, "tier1.compute_efficiency": 3.0, "loss.final": math.nan}).status is Status.DIVERGED


def test_roofline_point_above_its_roof():
    peak, bw = 1e12, 1e11
    under = point("matmul", flops=1e9, moved_bytes=1e8, seconds=1e-2, peak_flops=peak, bandwidth=bw)  # 1e11 <= 1e12
    above = point("norm", flops=1e9, moved_bytes=1e9, seconds=1e-3, peak_flops=peak, bandwidth=bw)  # 1e12 > 1e11 roof
    assert roofline_violations([under]) == []
    (message,) = roofline_violations([under, above])
    assert "norm" in message
    failure = check_result(GOOD, roofline_points=[under, above])
    assert failure.status is Status.INVALID_RESULT and "norm" in failure.reason


# ---- wired into the pipeline (dabench/pipeline/execute.py): sweeps of predicted and measured configs ----

import json  # noqa: E402

from dabench.config.build import build_run_config  # noqa: E402
from dabench.host import calibrate  # noqa: E402
from dabench.metrics.summary import roofline_points  # noqa: E402
from dabench.pipeline.execute import execute  # noqa: E402
from tests.conftest import composed  # noqa: E402

EFFICIENCIES = ("tier1.compute_efficiency", "tier1.bandwidth_efficiency.", "roofline.step.roof_share")


def _assert_within_bounds(result, rc):
    efficiencies = {k: v for k, v in result.metrics.items() if k.startswith(EFFICIENCIES)}
    assert efficiencies, "no efficiency recorded"
    # a measured efficiency is judged as the result check judges it: against the top of its roof's
    # band (host/noise.held_to_band_top; ceilings.band_width is 0 on a steady or predicted run)
    width = result.metrics.get("ceilings.band_width", 0.0)
    central = {k: v for k, v in efficiencies.items() if not k.endswith((".lo", ".hi"))}
    assert all(v / (1.0 + width) <= 1.0 + 1e-6 for v in central.values()), (width, efficiencies)
    for name, value in central.items():  # a band's top stops at 1 (or at its value, above 1)
        assert efficiencies.get(f"{name}.hi", 0.0) <= max(value, 1.0) + 1e-9, (name, efficiencies)
        assert efficiencies.get(f"{name}.lo", 0.0) <= min(value, 1.0) + 1e-9, (name, efficiencies)
    for profile in (result.profile, result.predicted):
        if profile is not None:
            for p in roofline_points(result.graph, profile, result.ceilings, rc.data_copies):
                assert p.achieved is None or p.achieved <= p.attainable * (1 + 1e-6), p


PREDICTED = [
    ["hardware=cpu"],
    ["hardware=cpu", "precision=bf16", "run.batch_size=16"],
    ["hardware=cuda", "precision=fp32"],
    ["hardware=cuda", "precision=fp32", "hardware.options.tf32=true"],
    ["hardware=cuda", "model=gpt2_small", "precision=bf16", "run.batch_size=8"],
    ["hardware=wse2", "model=gpt2_small", "precision=fp16"],
    ["hardware=wse2", "precision=mixed"],
    ["hardware=rdu", "precision=bf16"],
    ["hardware=rdu", "model=gpt2_small", "precision=mixed", "run.batch_size=8"],
    ["hardware=ipu", "precision=fp16"],
    [
        "hardware=ipu",
        "model=gpt2_test",
        "precision=fp16",
        "parallel=pp",
        "parallel.placement='0 4 4 4'",
        "run.batch_size=1",
        "run.grad_accum=16",
        "hardware.options.available_memory_proportion=0.15",
        "hardware.options.embedding_serialization_factor=4",
    ],  # the paper's placement (fits)
]


@pytest.mark.parametrize("overrides", PREDICTED, ids=lambda o: " ".join(o))
def test_predicted_configs_never_exceed_their_bounds(overrides):
    rc = build_run_config(composed(["hardware.mode=predict", *overrides]))
    result = execute(rc)
    if result.status is not Status.OK:  # a refusal (capacity, ...) is a result, but never invalid_result
        assert result.status not in (Status.INVALID_RESULT, Status.DIVERGED), result.reason
        pytest.skip(f"{result.status.value}: {result.reason[:200]}")
    _assert_within_bounds(result, rc)


MEASURED = [["model.n_layers=1"], ["model.n_layers=2", "run.batch_size=1"], ["precision=bf16", "model.n_layers=1"]]


@pytest.mark.slow
@pytest.mark.parametrize("overrides", MEASURED, ids=lambda o: " ".join(o))
def test_measured_cpu_configs_never_exceed_their_bounds(overrides):
    rc = build_run_config(composed(["hardware.mode=validate", "run.warmup_steps=1", "run.timed_steps=2", *overrides]))
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    assert math.isfinite(result.metrics["loss.final"])
    assert result.profile.tags["precision_native"] in ("true", "false")
    _assert_within_bounds(result, rc)


@pytest.fixture
def calibration(tmp_path, monkeypatch):
    """Point the calibration cache at a fresh folder; ``write(value)`` stores one for every key."""
    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(calibrate, "_PROCESS", {})

    def write(flops, bandwidth):
        import torch

        entries = {}
        for kind, value in (("gemm_fp32", flops), ("copy", bandwidth)):
            key = calibrate.calibration_key(kind, torch.get_num_threads())
            entries[key] = {
                "key": key,
                "value": value,
                "samples": [value] * 5,
                "spread": 0.0,
                "load_per_core": 0.0,
                "measured_at": "test",
            }
        (tmp_path / "calibration.json").write_text(json.dumps(entries))

    return write


def test_an_efficiency_above_one_fails_the_run_unclamped(calibration, monkeypatch):
    calibration(1e6, 1e6)  # ceilings far below what the CPU does: every efficiency is > 1
    # and a probe after the run shows no faster machine (dabench.pipeline.execute.probe_again)
    monkeypatch.setattr(calibrate, "probe", lambda dtype, repeats=3: calibrate.Probe(1e6, 1e6, (1e6,), (1e6,)))
    result = execute(
        build_run_config(
            composed(["hardware.mode=measure", "run.warmup_steps=1", "run.timed_steps=2", "run.profile_subtasks=false"])
        )
    )
    assert result.status is Status.INVALID_RESULT
    assert "tier1.compute_efficiency=" in result.reason
    assert result.metrics["tier1.compute_efficiency"] > 1  # recorded as computed, never clamped
    assert not result.ok and math.isnan(result.objective)


def test_a_non_finite_loss_is_diverged(monkeypatch):
    import torch

    from dabench.backends import torch_train

    real_step = torch_train.TrainState.step
    monkeypatch.setattr(torch_train.TrainState, "step", lambda self: real_step(self) * float("nan"))  # a NaN loss
    result = execute(
        build_run_config(
            composed(["hardware.mode=measure", "run.warmup_steps=1", "run.timed_steps=2", "run.profile_subtasks=false"])
        )
    )
    assert result.status is Status.DIVERGED, (result.status, result.reason)
    assert "loss.final" in result.reason and math.isnan(result.metrics["loss.final"])
    assert torch.isfinite(torch.tensor(result.metrics["throughput.samples_per_s"]))


def test_busy_machine_measured_run_is_ok_without_ceiling_metrics(calibration, monkeypatch):
    monkeypatch.setattr(calibrate, "load_per_core", lambda: 3.0)  # nothing cached and too busy to calibrate
    result = execute(build_run_config(composed(["hardware.mode=measure", "run.warmup_steps=1", "run.timed_steps=2"])))
    assert result.status is Status.OK, result.reason
    assert result.metrics["throughput.samples_per_s"] > 0
    assert not [k for k in result.metrics if "efficiency" in k or k.startswith("roofline.") and "intensity" not in k]
    assert "load average 3.00 per core" in result.notes["dabench.ceilings_note"]
    assert result.diagnosis[0] == "undiagnosed"


def test_busy_machine_prediction_on_cpu_is_unsupported_with_the_reason(calibration, monkeypatch):
    monkeypatch.setattr(calibrate, "load_per_core", lambda: 3.0)
    result = execute(build_run_config(composed(["hardware.mode=validate", "run.warmup_steps=1", "run.timed_steps=2"])))
    assert result.status is Status.UNSUPPORTED and "machine busy" in result.reason


def test_cpu_allocation_failure_is_oom():
    from dabench.backends.torch_device import is_out_of_memory

    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(
        RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory")
    )
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    # a real one: the attention projection of hidden 2^20 needs ~12 TB, refused by the allocator at once
    result = execute(
        build_run_config(
            composed(
                [
                    "hardware.mode=measure",
                    "model.hidden_size=1048576",
                    "model.n_heads=1",
                    "model.vocab_size=8",
                    "model.n_layers=1",
                    "model.seq_len=2",
                    "run.batch_size=1",
                ]
            )
        )
    )
    assert result.status is Status.OOM, result.reason
    assert "can't allocate memory" in result.reason


def test_a_measured_class_above_the_memory_roof_is_named_and_judged_by_the_compute_roof():
    """A measured op class whose working set stays in cache runs above the DRAM roof for real:
    the check holds it to the compute roof only and names it in dabench.roofline_note; above the
    compute roof it is still invalid_result."""
    from dabench.core.ceilings import Ceilings
    from dabench.metrics.roofline import RooflinePoint
    from dabench.pipeline.execute import measured_points_bound

    ceilings = Ceilings(peak_flops=1e11, bandwidth_Bps=1e9, memory_level="dram", source="test")
    cached = RooflinePoint("loss", 1.0, 2e9, 1e9, 1.0, 1.0, 100.0)  # 2x its memory roof
    fine = RooflinePoint("matmul", 200.0, 5e10, 1e11, 1.0, 1.0, 100.0)
    notes: dict[str, str] = {}
    judged = measured_points_bound([cached, fine], ceilings, notes)
    assert check_result(GOOD, roofline_points=judged) is None
    assert "loss" in notes["dabench.roofline_note"] and "matmul" not in notes["dabench.roofline_note"]
    impossible = RooflinePoint("loss", 1.0, 2e11, 1e9, 1.0, 1.0, 100.0)  # above the peak
    failure = check_result(GOOD, roofline_points=measured_points_bound([impossible], ceilings, {}))
    assert failure.status is Status.INVALID_RESULT and "loss" in failure.reason
