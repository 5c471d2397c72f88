"""The result check (dabench.metrics.checks): non-finite -> diverged, a broken bound ->
invalid_result, never clamped."""

import math

import pytest

from dabench.metrics.checks import check_result, roofline_violations
from dabench.metrics.roofline import point
from dabench.status import Status

GOOD = {"throughput.samples_per_s": 100.0, "step_time.median_s": 0.04, "tier1.compute_efficiency": 0.4,
        "tier1.bandwidth_efficiency.dram": 0.2, "roofline.step.roof_share": 0.4, "tier1.allocation_ratio": 1.0,
        "tier2.scaling_efficiency": 1.05, "predict.rel_error.samples_per_s": -0.3}


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


@pytest.mark.parametrize("name", ["tier1.compute_efficiency", "tier1.bandwidth_efficiency.dram",
                                  "roofline.step.roof_share", "predict.tier1.compute_efficiency",
                                  "tier1.allocation_ratio.cores", "tier1.load_imbalance"])
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
