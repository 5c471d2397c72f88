"""The CUDA backend on a real GPU; skipped cleanly where there is none (as in CI)."""

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")]


def test_cuda_measured_run_uses_events_and_reports_gpu_memory():
    from dabench.backends.measure import CudaClock
    from dabench.config import build_run_config
    from dabench.runner import execute
    from dabench.status import Status
    from tests.conftest import composed

    assert CudaClock(torch.device("cuda")).mark().__class__.__name__ == "Event"
    rc = build_run_config(composed(["hardware=cuda", "hardware.mode=measure", "precision=bf16",
                                    "run.warmup_steps=2", "run.timed_steps=5"]))
    result = execute(rc)
    assert result.status is Status.OK, result.reason
    assert result.metrics["memory.peak_bytes.hbm"] > 0
    assert result.metrics["tier1.allocation_ratio.sms"] > 0
    assert result.profile.source.startswith("cuda:")
    assert 0 < result.metrics["tier1.compute_efficiency"] < 1
