"""The cstorch backends. The real training step needs the cerebras-pytorch venv that
scripts/setup_cerebras_venv.sh creates (<repo>/.venv-cerebras); it is skipped, saying so, when
that venv is absent."""

from __future__ import annotations

import pytest
from vendor_helpers import run_config

from dabench.backends import get_backend
from dabench.core.status import Status, UnsupportedError
from dabench.pipeline.execute import execute
from dabench.platforms.wse.backend import DEFAULT_VENV_PYTHON, CstorchBackend, CstorchCpuBackend
from dabench.platforms.wse.runner import half_dtype, num_csx

requires_venv = pytest.mark.skipif(
    not DEFAULT_VENV_PYTHON.exists(),
    reason=f"no cerebras venv at {DEFAULT_VENV_PYTHON}: run scripts/setup_cerebras_venv.sh",
)


def test_registered():
    assert get_backend("cstorch") is CstorchBackend and get_backend("cstorch_cpu") is CstorchCpuBackend


def test_missing_interpreter_names_the_setup_script(tmp_path):
    rc = run_config("wse2", backend="cstorch_cpu", python=str(tmp_path / "bin" / "python"))
    assert "does not exist" in CstorchCpuBackend.availability(rc).reason
    rc = run_config("wse2", backend="cstorch_cpu", python="/usr/bin/false")  # exists, cannot probe
    assert not CstorchCpuBackend.availability(rc).ok


def test_runner_settings():
    rc = run_config("wse2", precision="mixed", parallel={"strategy": "dp", "degree": 2}).to_dict()
    assert half_dtype(rc) == "bfloat16" and num_csx(rc) == 2
    rc["hardware"]["options"]["runner_half_dtype"] = "cbfloat16"
    assert half_dtype(rc) == "cbfloat16"
    assert half_dtype(run_config("wse2", precision="fp16").to_dict()) == "float16"


def test_cpu_backend_refuses_what_cstorch_cpu_cannot_do():
    with pytest.raises(UnsupportedError, match="bfloat16 only"):
        CstorchCpuBackend().check(run_config("wse2", backend="cstorch_cpu", precision="fp16"))
    with pytest.raises(UnsupportedError, match="weight streaming only"):
        CstorchCpuBackend().check(run_config("wse2", backend="cstorch_cpu", parallel={"strategy": "pp", "degree": 2}))


@requires_venv
@pytest.mark.slow  # the venv may be half-installed while the fast suite runs (.ci/run installs it beside it)
def test_csx_without_a_cluster_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("CSCONFIG_PATH", str(tmp_path / "no_config"))
    availability = CstorchBackend.availability(run_config("wse2"))
    assert (
        not availability.ok and "no Wafer-Scale Cluster" in availability.reason and "cstorch_cpu" in availability.reason
    )


@requires_venv
@pytest.mark.slow
def test_real_cstorch_cpu_training_step(tmp_path, monkeypatch):
    """A real dabench training run through runner isolation on cstorch's CPU backend."""
    monkeypatch.chdir(tmp_path)
    rc = run_config("wse2", backend="cstorch_cpu", precision="mixed", batch_size=2, warmup_steps=1, timed_steps=2)
    assert CstorchCpuBackend.availability(rc).ok
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    profile = result.profile
    assert profile.mode == "measure" and profile.source == "cstorch_cpu"
    assert len(profile.step_times_s) == 2 and all(t > 0 for t in profile.step_times_s)
    assert profile.tags["cstorch.version"] == "2.10.0" and profile.tags["cstorch.half_dtype"] == "bfloat16"
    assert profile.tags["runner_python"].endswith(".venv-cerebras/bin/python")
    # cstorch's own RateTracker output (executors/000001/performance.json) is parsed back
    assert result.metrics["cerebras.total_samples"] == 2 * 3  # every step of the executor, warm-up included
    assert any(a.endswith("performance.json") for a in profile.artifacts)
    assert result.metrics["throughput.samples_per_s"] > 0 and result.metrics["loss.last"] > 0
