"""CUDA: TF32 pricing (unit tests, no GPU needed) and the backend on a real GPU (skipped cleanly
where there is none, as in CI)."""

import pytest

from dabench.config.build import build_run_config
from dabench.host.ceilings import resolve_ceilings, tf32_enabled
from dabench.perfmodel import get_predictor
from dabench.workload.opgraph import build_opgraph
from tests.conftest import composed


def _rc(*overrides):
    return build_run_config(composed(["hardware=cuda", "hardware.mode=predict", *overrides]))


def test_tf32_defaults_to_torchs_default_off():
    import yaml

    from tests.conftest import CONF

    assert yaml.safe_load((CONF / "hardware" / "cuda.yaml").read_text())["options"]["tf32"] is False
    assert not tf32_enabled(_rc("precision=fp32").hardware, _rc("precision=fp32").precision)


@pytest.mark.parametrize("tf32, peak", [(False, 6.7e13), (True, 4.945e14)])
def test_fp32_is_priced_at_the_math_mode_measure_runs(tf32, peak):
    rc = _rc("precision=fp32", f"hardware.options.tf32={str(tf32).lower()}")
    ceilings = resolve_ceilings(rc.hardware, rc.precision)
    assert ceilings.peak_flops == peak
    profile = get_predictor("cuda")(rc, build_opgraph(rc.model, rc.run.batch_size, rc.precision), ceilings)
    assert profile.tags["tf32"] == str(tf32).lower()


def test_tf32_makes_matmul_bound_fp32_faster_and_leaves_16_bit_alone():
    def step(*overrides):
        rc = _rc(*overrides)
        graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
        return get_predictor("cuda")(rc, graph, resolve_ceilings(rc.hardware, rc.precision)).median_step_s

    big = ["model=gpt2_small", "run.batch_size=16"]
    assert step(*big, "precision=fp32", "hardware.options.tf32=true") < 0.5 * step(*big, "precision=fp32")
    assert step(*big, "precision=bf16", "hardware.options.tf32=true") == step(*big, "precision=bf16")
    assert step(*big, "precision=mixed", "hardware.options.tf32=true") == step(*big, "precision=mixed")


def test_tf32_is_a_recorded_param():
    from dabench.config.build import flatten

    assert flatten(composed(["hardware=cuda", "hardware.options.tf32=true"]))["hardware.options.tf32"] is True


def _torch_standin(hip, cuda, devices):
    """A stand-in for the torch module: version strings and a torch.cuda with ``devices`` names."""
    from types import SimpleNamespace

    return SimpleNamespace(
        version=SimpleNamespace(hip=hip, cuda=cuda),
        cuda=SimpleNamespace(is_available=lambda: bool(devices), get_device_name=lambda i: devices[i]),
    )


@pytest.mark.parametrize(
    "hip, cuda, devices, want",
    [
        ("6.2.41133", None, ["AMD Instinct MI300X"], ("AMD", "rocm 6.2.41133", "AMD Instinct MI300X")),
        (None, "12.4", ["NVIDIA H100 80GB HBM3"], ("NVIDIA", "cuda 12.4", "NVIDIA H100 80GB HBM3")),
        (None, "12.4", [], ("NVIDIA", "cuda 12.4", None)),  # a CUDA build on a machine without a GPU
        ("6.2", None, [], ("AMD", "rocm 6.2", None)),
    ],
)
def test_gpu_identity_reads_vendor_runtime_and_device_from_the_torch_module(hip, cuda, devices, want):
    from dabench.host.info import gpu_identity

    tags = gpu_identity(_torch_standin(hip, cuda, devices))
    assert (tags["gpu_vendor"], tags["gpu_runtime"], tags.get("gpu_name")) == want


torch = pytest.importorskip("torch")
gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("tf32", [False, True])
def test_cuda_measured_run_uses_events_and_the_priced_math_mode(tf32):
    from dabench.backends.measure import CudaClock
    from dabench.core.status import Status
    from dabench.pipeline.execute import execute

    assert CudaClock(torch.device("cuda")).mark().__class__.__name__ == "Event"
    rc = build_run_config(
        composed(
            [
                "hardware=cuda",
                "hardware.mode=validate",
                "precision=fp32",
                f"hardware.options.tf32={str(tf32).lower()}",
                "run.warmup_steps=2",
                "run.timed_steps=5",
            ]
        )
    )
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    assert torch.backends.cuda.matmul.allow_tf32 is tf32
    assert result.profile.tags["tf32"] == result.predicted.tags["tf32"] == str(tf32).lower()
    assert result.metrics["memory.peak_bytes.hbm"] > 0
    assert result.metrics["tier1.allocation_ratio.sms"] > 0
    assert result.profile.source.startswith("cuda:")
    assert result.profile.tags["gpu_name"] == torch.cuda.get_device_name(0)
    assert result.profile.tags["gpu_vendor"] == ("AMD" if torch.version.hip else "NVIDIA")
    assert 0 < result.metrics["tier1.compute_efficiency"] < 1


@pytest.mark.cuda
@gpu
def test_cuda_bf16_run():
    from dabench.core.status import Status
    from dabench.pipeline.execute import execute

    rc = build_run_config(
        composed(
            ["hardware=cuda", "hardware.mode=measure", "precision=bf16", "run.warmup_steps=2", "run.timed_steps=5"]
        )
    )
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    assert 0 < result.metrics["tier1.compute_efficiency"] < 1
