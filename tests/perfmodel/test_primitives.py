"""The shared primitives: collectives, pipeline schedule, capacity accounting."""

import math

import pytest

from dabench.config.sections import Link, PrecisionConfig
from dabench.core.status import CapacityError
from dabench.metrics.tier2 import pipeline_bubble_fraction
from dabench.perfmodel.capacity import MemoryUse, require_fits, training_state
from dabench.perfmodel.comm import allgather_s, group_link, p2p_s, reduce_scatter_s, ring_allreduce_s
from dabench.perfmodel.pipeline import pipeline_time, stash_depth

LINK = Link("test", bandwidth_Bps=1e9, latency_s=1e-5)


def test_collectives_match_the_ring_formulas():
    s, n = 8e6, 4
    assert ring_allreduce_s(s, n, LINK) == pytest.approx(2 * 3 / 4 * s / 1e9 + 2 * 3 * 1e-5)
    assert allgather_s(s, n, LINK) == pytest.approx(3 / 4 * s / 1e9 + 3 * 1e-5)
    assert reduce_scatter_s(s, n, LINK) == allgather_s(s, n, LINK)
    assert p2p_s(s, LINK) == pytest.approx(s / 1e9 + 1e-5)
    assert ring_allreduce_s(s, 1, LINK) == 0.0 and p2p_s(0, LINK) == 0.0
    # more ranks: the bandwidth term tends to 2 S / B, the latency term grows linearly
    assert ring_allreduce_s(s, 64, LINK) > ring_allreduce_s(s, 8, LINK)
    with pytest.raises(ValueError):
        ring_allreduce_s(s, 0, LINK)


def test_group_link_uses_the_inter_link_once_a_ring_leaves_the_node():
    intra, inter = Link("a", 1e11, 1e-6, "intra"), Link("b", 1e10, 1e-5, "inter")
    assert group_link((intra, inter), chips_per_node=4, ranks=4) is intra
    assert group_link((intra, inter), chips_per_node=4, ranks=8) is inter
    assert group_link((intra,), chips_per_node=4, ranks=8) is intra
    assert group_link((), 4, 2) is None


@pytest.mark.parametrize("stages,micro", [(2, 1), (4, 8), (8, 2048)])
def test_equal_stages_give_the_textbook_bubble(stages, micro):
    timing = pipeline_time([0.5] * stages, micro)
    assert timing.step_s == pytest.approx((micro + stages - 1) * 0.5)
    assert timing.bubble_s / timing.step_s == pytest.approx(pipeline_bubble_fraction(stages, micro))


def test_the_slowest_stage_paces_the_pipeline():
    timing = pipeline_time([1.0, 3.0, 2.0], 10)
    assert timing.step_s == pytest.approx(6.0 + 9 * 3.0)
    assert timing.bottleneck == 1
    assert timing.bubble_s == pytest.approx(timing.step_s - 10 * 3.0)


def test_stash_depths():
    assert [stash_depth(i, 4, 16, "gpipe") for i in range(4)] == [16] * 4
    assert [stash_depth(i, 4, 16, "1f1b") for i in range(4)] == [4, 3, 2, 1]
    assert [stash_depth(i, 4, 16, "interleaved") for i in range(4)] == [7, 5, 3, 1]
    assert stash_depth(0, 4, 2, "interleaved") == 2
    with pytest.raises(ValueError):
        stash_depth(4, 4, 2, "1f1b")


@pytest.mark.parametrize(
    "name,param,compute,autocast,per_param",
    [
        ("fp32", "fp32", "fp32", False, 16),  # 4 weights + 4 grads + 8 moments
        ("fp16", "fp16", "fp16", False, 8),
        ("mixed", "fp32", "bf16", True, 18),  # fp32 master + bf16 copy + fp32 grads + moments
    ],
)
def test_training_state_bytes_per_precision(name, param, compute, autocast, per_param):
    precision = PrecisionConfig(name, param, compute, autocast)
    state = training_state(1000, precision, compute_copy=True)
    assert state.total == 1000 * per_param
    ipu_half = training_state(1000, PrecisionConfig("fp16", "fp16", "fp16", False), grad_bytes=2, moment_bytes=(2, 4))
    assert ipu_half.total == 1000 * 10


def test_capacity_error_names_memory_needed_and_available():
    use = MemoryUse(weights=2**30, activations=2**29)
    require_fits("sram", use.total, 2**31)
    with pytest.raises(CapacityError) as info:
        require_fits("ipu1 In-Processor-Memory", use.total, 2**30, use.describe())
    error = info.value
    assert error.memory == "ipu1 In-Processor-Memory" and error.needed_bytes == 1.5 * 2**30
    assert error.available_bytes == 2**30 and "weights 1.00 GiB" in error.reason
    assert math.isclose(use.plus(activations=1.0).total, use.total + 1.0)
