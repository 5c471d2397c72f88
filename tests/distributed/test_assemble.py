"""All ranks' figures -> one Profile, on made-up numbers (no processes)."""

import pytest

from dabench.config.build import build_run_config
from dabench.core.profile import UnitUse
from dabench.distributed.assemble import assemble_profile, parallel_losses, step_times, transfer_seconds
from dabench.distributed.busbw import summarize
from tests.conftest import composed


def interval(step, kind, op, seconds, nbytes=0.0):
    return {"step": step, "kind": kind, "op": op, "bytes": nbytes, "seconds": seconds}


def dp_rank(rank, steps, comm, exposed, losses):
    """A DP rank: per step one 1 MB all-reduce taking comm[k] s in flight, exposed[k] s exposed."""
    intervals = [interval(k, "comm", "allreduce", c, 1e6) for k, c in enumerate(comm)]
    intervals += [interval(k, "exposed", "allreduce", e) for k, e in enumerate(exposed)]
    return {
        "rank": rank,
        "role": {"replica": rank},
        "threads": 1,
        "losses": losses,
        "step_s": steps,
        "intervals": intervals,
        "peak_memory_bytes": 100.0 + rank,
    }


def dp_results():
    rank0 = dp_rank(0, [0.10, 0.12, 0.11], [0.02, 0.03, 0.02], [0.01, 0.01, 0.01], [2.0, 1.0, 0.5])
    rank1 = dp_rank(1, [0.11, 0.10, 0.13], [0.01, 0.01, 0.01], [0.02, 0.02, 0.02], [4.0, 3.0, 1.5])
    rank0["baseline"] = {"step_s": [0.2, 0.2, 0.2], "losses": [3.0, 2.0, 1.0], "samples_per_step": 8}
    return [rank0, rank1]


def test_dp_profile_from_two_ranks():
    rc = build_run_config(composed(["parallel=dp", "parallel.degree=2", "run.timed_steps=3"]))
    profile = assemble_profile(rc, dp_results(), "cpu", "dram", {"cores": UnitUse(2, 2)}, "gloo")
    assert profile.step_times_s == [0.11, 0.12, 0.13]  # slowest rank per step
    (event,) = profile.comm
    assert (event.strategy, event.op, event.count, event.bytes, event.ranks) == ("dp", "allreduce", 1, 1e6, 2)
    assert event.time_s == pytest.approx(0.015)  # exposed: mean over ranks of the median step
    extra = profile.extra_metrics
    assert extra["tier2.comm_total_time_s.dp"] == pytest.approx((0.02 + 0.01) / 2)
    # transfer per call = min over ranks = 0.01 s; all-reduce busbw = 1 MB / 0.01 s * 2(2-1)/2
    assert extra["tier2.busbw_GBps.allreduce"] == pytest.approx(0.1)
    assert [s.time_s for s in profile.subtasks] == pytest.approx([0.11 - 0.01, 0.11 - 0.02])
    assert profile.memory_bytes == {"dram.rank0": 100.0, "dram.rank1": 101.0, "dram": 101.0}
    assert profile.single_chip_samples_per_s == pytest.approx(8 / 0.2)
    assert extra["distributed.loss_max_abs_diff"] == pytest.approx(0.0)  # mean of ranks = baseline
    assert profile.samples_per_step == rc.samples_per_step == 2 * rc.run.batch_size
    assert profile.chips == 2 and profile.tags["subtask_kind"] == "rank"


def test_transfer_time_takes_each_calls_minimum_over_ranks():
    a = {"calls": [interval(0, "comm", "allreduce", s) for s in (0.5, 0.1)]}
    b = {"calls": [interval(0, "comm", "allreduce", s) for s in (0.2, 0.3)]}
    assert transfer_seconds([a, b], "calls", "allreduce", 1) == pytest.approx(0.2 + 0.1)


def pp_rank(rank, stage, step, compute, one_way, losses):
    intervals = [interval(k, "compute", "forward", c / 2) for k, c in enumerate(compute)]
    intervals += [interval(k, "compute", "backward", c / 2) for k, c in enumerate(compute)]
    return {
        "rank": rank,
        "role": {"stage": stage, "replica": 0, "layers": [stage, stage + 1]},
        "threads": 1,
        "losses": losses,
        "step_s": step,
        "intervals": intervals,
        "peak_memory_bytes": 1.0,
        "p2p_one_way_s": {"0": one_way},
        "p2p_bytes": 4096,
        "micro_batch": 1,
    }


def test_pp_bubble_is_what_is_left_of_the_step_after_compute_and_p2p():
    rc = build_run_config(
        composed(["parallel=pp", "parallel.degree=2", "parallel.micro_batches=4", "run.timed_steps=2"])
    )
    results = [
        pp_rank(0, 0, [1.0, 1.0], [0.5, 0.5], 0.01, [None, None]),
        pp_rank(1, 1, [1.0, 1.0], [0.7, 0.7], 0.03, [5.0, 4.0]),
    ]
    profile = assemble_profile(rc, results, "cpu", "dram", {}, "gloo")
    p2p = next(e for e in profile.comm if e.op == "p2p")
    bubble = next(e for e in profile.comm if e.op == "bubble")
    messages = 2 * 4  # activations forward and gradients backward, per micro-batch
    assert p2p.count == messages and p2p.bytes == 4096
    assert p2p.time_s == pytest.approx(messages * 0.02)  # one-way time: median of both reports
    assert bubble.time_s == pytest.approx(((1 - 0.5 - 0.16) + (1 - 0.7 - 0.16)) / 2)
    assert [s.name for s in profile.subtasks] == ["stage0", "stage1"]
    assert [s.time_s for s in profile.subtasks] == pytest.approx([0.5, 0.7])
    assert profile.extra_metrics["tier2.bubble_fraction_ideal"] == pytest.approx(1 / 5)
    assert profile.extra_metrics["tier2.busbw_GBps.p2p"] == pytest.approx(4096 / 0.02 / 1e9)
    assert parallel_losses(rc, results) == [5.0, 4.0]


def test_step_time_is_the_slowest_rank_per_step():
    assert step_times([{"step_s": [1.0, 3.0]}, {"step_s": [2.0, 1.0]}]) == [2.0, 3.0]


def test_busbw_table_uses_the_slowest_rank_and_nccl_tests_factors():
    per_rank = [
        {"allreduce": {"1000": 1e-3}, "sendrecv": {"1000": 1e-3}},
        {"allreduce": {"1000": 2e-3}, "sendrecv": {"1000": None}},
    ]
    rows = {r["op"]: r for r in summarize(per_rank, 2)}
    assert rows["allreduce"]["time_us"] == pytest.approx(2000)
    assert rows["allreduce"]["busbw_GBps"] == pytest.approx(1000 / 2e-3 / 1e9)  # 2(n-1)/n = 1 for n=2
    assert rows["sendrecv"]["busbw_GBps"] == pytest.approx(1000 / 1e-3 / 1e9)
