"""Roofline points lie under their roof on every platform, predicted and measured.

The roof of a point is min(peak FLOP/s at the run's precision, intensity * bandwidth) with the
run's own ceilings; a point above it is a defect in the point's work or time, not in the drawing.
"""

from __future__ import annotations

import pytest

from dabench.config import build_run_config
from dabench.metrics.roofline import attainable_flops
from dabench.metrics.summary import roofline_points
from dabench.runner import execute
from tests.conftest import composed

TOLERANCE = 1e-6

PLATFORMS = {
    "cpu-predict": ["hardware=cpu", "hardware.mode=predict"],
    "cuda-predict": ["hardware=cuda", "hardware.mode=predict"],
    "cuda-predict-bf16": ["hardware=cuda", "hardware.mode=predict", "precision=bf16"],
    "wse2": ["hardware=wse2", "hardware.mode=predict"],
    "rdu": ["hardware=rdu", "hardware.mode=predict"],
    "rdu-mixed": ["hardware=rdu", "hardware.mode=predict", "precision=mixed"],
    "ipu-pp": ["hardware=ipu", "hardware.mode=predict", "parallel=pp", "run.grad_accum=4"],
    "cpu-measured": ["hardware=cpu", "hardware.mode=measure", "run.warmup_steps=1", "run.timed_steps=2"],
}


@pytest.mark.parametrize("overrides", PLATFORMS.values(), ids=PLATFORMS.keys())
def test_every_point_is_under_its_roof(overrides):
    rc = build_run_config(composed(overrides))
    result = execute(rc)
    assert result.status.value == "ok", result.reason
    profile = result.profile or result.predicted
    expected_mode = "measure" if "hardware.mode=measure" in overrides else "predict"
    assert profile.mode == expected_mode
    peak, bandwidth = result.ceilings.peak_flops, result.ceilings.bandwidth_Bps
    points = roofline_points(result.graph, profile, result.ceilings, rc.data_copies)
    timed = [p for p in points if p.achieved is not None]
    assert any(p.name == "step" for p in timed)
    for p in timed:
        roof = min(peak, p.intensity * bandwidth)
        assert p.attainable == pytest.approx(attainable_flops(p.intensity, peak, bandwidth))
        assert p.achieved <= roof * (1 + TOLERANCE), f"{p.name}: {p.achieved:.4g} FLOP/s above its roof {roof:.4g}"
    if rc.hardware.name in ("cpu", "cuda"):  # per-class points: measured by torch.profiler or predicted per class
        assert {p.name for p in timed} >= {"matmul", "attention", "loss", "optimizer", "step"}


def test_log_softmax_time_is_the_loss_class():
    """The cross-entropy's log-softmax (forward and backward) is timed as loss, whose FLOPs the op
    graph counts; under attention it left the loss point with too little time, above its roof."""
    pytest.importorskip("torch")
    from dabench.backends.torch_train import op_class_of

    for name in ("aten::_log_softmax", "aten::log_softmax", "aten::_log_softmax_backward_data",
                 "aten::nll_loss_forward", "aten::nll_loss_backward", "aten::cross_entropy_loss"):
        assert op_class_of(name) == "loss", name
    for name in ("aten::_softmax", "aten::_scaled_dot_product_flash_attention_for_cpu"):
        assert op_class_of(name) == "attention", name
