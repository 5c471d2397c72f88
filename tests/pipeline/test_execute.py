"""Outcomes of one run: every failure becomes a result with a status and a reason."""

import pytest

from dabench.backends.base import Availability, Backend
from dabench.config.build import build_run_config
from dabench.core.status import CapacityError, Status
from dabench.pipeline import execute as runner
from tests.conftest import composed


def fake_backend(exc):
    class Failing(Backend):
        name = "failing"

        @classmethod
        def availability(cls, rc):
            return Availability(True)

        def run(self, rc, graph, on_timed_window=None):
            raise exc

    return Failing


@pytest.mark.parametrize(
    "exc,status",
    [
        (CapacityError("sram", 2e9, 1e9, "stage 1"), Status.CAPACITY),
        (RuntimeError("boom"), Status.CRASHED),
        (type("OutOfMemoryError", (RuntimeError,), {})("CUDA out of memory. Tried to allocate"), Status.OOM),
    ],
)
def test_failures_become_results(monkeypatch, exc, status):
    monkeypatch.setattr(runner, "get_backend", lambda name: fake_backend(exc))
    result = runner.execute(build_run_config(composed(["hardware.mode=measure"])))
    assert result.status is status
    assert result.reason
    assert result.objective != result.objective  # NaN for the sweeper


def test_capacity_reason_names_memory_and_sizes():
    error = CapacityError("ipu1.sram", 1.5 * 2**30, 0.9 * 2**30, "stage 1: 6 layers")
    assert "ipu1.sram" in error.reason and "1,536.0 MiB" in error.reason and "921.6 MiB" in error.reason


def test_cuda_measure_without_gpu_is_unsupported():
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = runner.execute(build_run_config(composed(["hardware=cuda", "hardware.mode=measure"])))
    assert result.status is Status.UNSUPPORTED and "CUDA" in result.reason


def test_measured_cpu_run_is_ok_and_consistent():
    rc = build_run_config(composed(["run.warmup_steps=1", "run.timed_steps=3"]))
    result = runner.execute(rc)
    assert result.status is Status.OK, result.reason
    assert result.mode == "measure"
    m = result.metrics
    assert m["throughput.samples_per_s"] == pytest.approx(rc.samples_per_step / m["step_time.median_s"])
    assert m["step_time.p10_s"] <= m["step_time.median_s"] <= m["step_time.p90_s"]
    assert 0 < m["tier1.load_imbalance"] <= 1
    assert [s.name for s in result.profile.subtasks] == ["embedding", "block.0", "block.1", "head"]
    assert all(s.time_s > 0 for s in result.profile.subtasks)
    assert m["subtask.coverage"] > 0  # (layers + optimizer) / step; timing ratios are not asserted


def test_prepare_applies_the_placement_once_for_everything_downstream():
    from dabench.pipeline.job import prepare

    job = prepare(composed(["hardware=ipu", "parallel=pp", "parallel.placement='0 2 2'", "hardware.mode=predict"]))
    assert job.error is None and job.container["parallel"]["layers_per_stage"] == [0, 2, 2]
    assert job.container["model"]["n_layers"] == 4 and tuple(job.rc.parallel.layers_per_stage) == (0, 2, 2)
    bad = prepare(composed(["hardware=ipu", "parallel=pp", "parallel.placement='0 x'"]))
    assert bad.rc is None and "parallel.placement" in str(bad.error)


def test_every_predictor_has_one_signature():
    import inspect

    from dabench.core.platforms import names
    from dabench.perfmodel import get_predictor

    for arch in names():
        predict = get_predictor(arch)
        target = predict.target() if hasattr(predict, "target") else predict  # a deferred import
        assert list(inspect.signature(target).parameters) == ["rc", "graph", "ceilings"], arch


def test_the_result_check_runs_once_per_run(monkeypatch):
    calls = []
    real = runner.check_result
    monkeypatch.setattr(runner, "check_result", lambda *a, **k: calls.append(1) or real(*a, **k))
    result = runner.execute(build_run_config(composed(["hardware=ipu", "hardware.mode=predict"])))
    assert result.status is Status.OK and len(calls) == 1
