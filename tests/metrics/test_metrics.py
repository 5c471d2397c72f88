"""Tier-1/Tier-2 metric functions on hand-computed numbers."""

import math

import pytest

from dabench.config.sections import ModelConfig, PrecisionConfig
from dabench.core.ceilings import Ceilings
from dabench.core.profile import CommEvent, Profile, Subtask, UnitUse
from dabench.metrics import tier1, tier2
from dabench.metrics.diagnosis import diagnose
from dabench.metrics.roofline import attainable_flops, point, ridge_point
from dabench.metrics.summary import compute_metrics, step_work
from dabench.workload.opgraph import build_opgraph


def test_allocation_ratio():
    assert tier1.allocation_ratio(115_259, 307_840) == pytest.approx(0.3744, abs=1e-4)
    assert tier1.allocation_metrics({"pcus": UnitUse(320, 640), "pmus": UnitUse(64, 640)}) == {
        "tier1.allocation_ratio": 0.5,
        "tier1.allocation_ratio.pcus": 0.5,
        "tier1.allocation_ratio.pmus": 0.1,
    }
    with pytest.raises(ValueError):
        tier1.allocation_ratio(1, 0)


def test_load_imbalance_is_mean_over_max():
    assert tier1.load_imbalance([1.0, 1.0, 1.0]) == 1.0
    assert tier1.load_imbalance([1.0, 2.0, 3.0]) == pytest.approx(2.0 / 3.0)
    assert tier1.load_imbalance([0.0, 4.0]) == 0.5
    with pytest.raises(ValueError):
        tier1.load_imbalance([])


def test_efficiencies():
    assert tier1.compute_efficiency(41e12, 100e12) == pytest.approx(0.41)
    assert tier1.bandwidth_efficiency(0.1e12, 0.2e12) == 0.5


def test_percentile_matches_linear_interpolation():
    assert tier1.percentile([1, 2, 3, 4, 5], 50) == 3
    assert tier1.percentile([1, 2, 3, 4, 5], 10) == pytest.approx(1.4)
    assert tier1.percentile([10.0], 90) == 10.0


def test_tier2():
    assert tier2.scaling_efficiency(180.0, 100.0, 2) == 0.9
    assert tier2.comm_fraction(0.25, 1.0) == 0.25
    assert tier2.comm_fraction(2.0, 1.0) == 1.0
    # all-reduce of 1 GB in 1 s on 4 ranks: busbw = 1 GB/s * 2*3/4
    assert tier2.bus_bandwidth("allreduce", 1e9, 1.0, 4) == pytest.approx(1.5e9)
    assert tier2.bus_bandwidth("p2p", 1e9, 2.0, 2) == 0.5e9
    assert tier2.pipeline_bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert tier2.strategy_breakdown([("dp", 1.0), ("pp", 0.5), ("dp", 0.25)]) == {"dp": 1.25, "pp": 0.5}


def test_roofline():
    assert ridge_point(100.0, 10.0) == 10.0
    assert attainable_flops(5.0, 100.0, 10.0) == 50.0
    assert attainable_flops(50.0, 100.0, 10.0) == 100.0
    p = point("x", flops=1000.0, moved_bytes=100.0, seconds=20.0, peak_flops=100.0, bandwidth=20.0)
    assert p.intensity == 10.0 and p.achieved == 50.0 and p.attainable == 100.0 and p.bound == "compute"
    assert point("y", 10.0, 100.0, None, 100.0, 20.0).bound == "memory"


def test_diagnosis_order():
    base = dict(comm_fraction=None, host_fraction=None, load_imbalance=None, subtasks_concurrent=False)
    assert diagnose(**base, intensity=1.0, ridge=10.0)[0] == "memory-bandwidth-bound"
    assert diagnose(**base, intensity=20.0, ridge=10.0)[0] == "compute-bound"
    assert diagnose(**{**base, "comm_fraction": 0.5}, intensity=20.0, ridge=10.0)[0] == "communication-bound"
    assert (
        diagnose(**{**base, "load_imbalance": 0.3, "subtasks_concurrent": True}, intensity=20.0, ridge=10.0)[0]
        == "imbalance-bound"
    )
    assert diagnose(**{**base, "load_imbalance": 0.3}, intensity=20.0, ridge=10.0)[0] == "compute-bound"
    assert diagnose(**base, intensity=20.0, ridge=10.0, roof_share=0.01)[0] == "latency-bound"


def test_compute_metrics_on_a_known_profile():
    model = ModelConfig("m", 2, 64, 4, 16, 100)
    graph = build_opgraph(model, 2, PrecisionConfig("fp32", "fp32", "fp32", False))
    profile = Profile(
        mode="predict",
        source="test",
        step_times_s=[0.1, 0.2, 0.3],
        samples_per_step=4,
        tokens_per_step=64,
        chips=2,
        units={"tiles": UnitUse(736, 1472)},
        subtasks=[Subtask("s0", time_s=0.1), Subtask("s1", time_s=0.2)],
        comm=[CommEvent("dp", "allreduce", 1e6, 0.05, 2), CommEvent("pp", "bubble", 0, 0.02, 2)],
        single_chip_samples_per_s=12.5,
        tags={"subtask_kind": "stage"},
    )
    ceilings = Ceilings(peak_flops=1e12, bandwidth_Bps=1e11, memory_level="sram")
    m = compute_metrics(profile, graph, ceilings, data_copies=2)
    assert m["throughput.samples_per_s"] == pytest.approx(20.0)
    assert m["throughput.tokens_per_s"] == pytest.approx(320.0)
    assert m["step_time.p10_s"] == pytest.approx(0.12)
    flops, moved = step_work(graph, 4, 2)
    assert flops == pytest.approx((graph.flops("fwd") + graph.flops("bwd")) * 2 + 2 * graph.flops("opt"))
    assert m["tier1.compute_efficiency"] == pytest.approx(flops / (0.2 * 2) / 1e12)
    assert m["tier1.allocation_ratio"] == 0.5
    assert m["tier1.load_imbalance"] == pytest.approx(0.75)
    assert m["tier2.comm_fraction"] == pytest.approx(0.25)
    assert m["tier2.bubble_time_s"] == pytest.approx(0.02)
    assert m["tier2.scaling_efficiency"] == pytest.approx(20.0 / (2 * 12.5))
    assert all(math.isfinite(v) for v in m.values())


def test_load_imbalance_from_rates():
    model = ModelConfig("m", 1, 64, 4, 16, 100)
    graph = build_opgraph(model, 1, PrecisionConfig("fp32", "fp32", "fp32", False))
    profile = Profile("measure", "t", [1.0], 1, 16, subtasks=[Subtask("k1", rate=100.0), Subtask("k2", rate=50.0)])
    m = compute_metrics(profile, graph, Ceilings(1e12, 1e11, "dram"))
    # times 0.01 and 0.02 -> mean 0.015 / max 0.02
    assert m["tier1.load_imbalance"] == pytest.approx(0.75)
