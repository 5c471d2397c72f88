"""Measured DP, TP and PP on gloo: the loss of the first steps equals the single-process run's,
and the one Profile built from all ranks carries the Tier-2 figures. One job per strategy,
shared by the tests of this module."""

from dataclasses import replace

import pytest
import torch

from dabench.backends.torch_train import build_train_state
from dabench.config.build import build_run_config
from dabench.config.sections import ParallelConfig
from dabench.core.ceilings import Ceilings
from dabench.distributed.assemble import assemble_profile, parallel_losses
from dabench.distributed.run import run_ranks
from dabench.metrics.summary import compute_metrics
from dabench.workload.opgraph import build_opgraph
from tests.conftest import composed

pytestmark = pytest.mark.slow

# 3 steps at a high learning rate, so that the loss moves far more than the tolerance
SHORT = ["run.warmup_steps=1", "run.timed_steps=2", "run.lr=0.01"]
JOBS = {
    "dp": ["parallel=dp", "parallel.degree=2"],
    "tp": ["parallel=tp", "parallel.degree=2"],
    # grouped-query attention: each rank holds 2 of the 4 query heads and 1 of the 2 K/V heads
    "tp_gqa": ["parallel=tp", "parallel.degree=2", "++model.n_kv_heads=2"],
    "pp": ["parallel=pp", "parallel.degree=2", "parallel.micro_batches=2"],
    "pp_1f1b_x_dp": [
        "parallel=pp",
        "parallel.degree=2",
        "parallel.replicas=2",
        "parallel.schedule=1f1b",
        "parallel.micro_batches=2",
    ],
    # GPT-2's tied head: the table lives on stage 0 and the last stage; its two gradients are summed
    "pp_tied": ["parallel=pp", "parallel.degree=2", "parallel.micro_batches=2", "++model.tie_embeddings=true"],
}
LOSS_ATOL = 1e-4  # fp32, different summation orders (split batch, sharded matmuls, micro-batches)


@pytest.fixture(scope="module")
def jobs():
    cache = {}

    def get(name):
        if name not in cache:
            rc = build_run_config(composed([*JOBS[name], *SHORT]))
            cache[name] = rc, run_ranks(rc, torch.device("cpu"))
        return cache[name]

    return get


def single_process_losses(rc) -> list[float]:
    """The reference: one process, the whole global batch, the lead's training step."""
    single = replace(rc, parallel=ParallelConfig(), run=replace(rc.run, batch_size=rc.run.batch_size * rc.data_copies))
    state = build_train_state(single, torch.device("cpu"))
    return [float(state.step().detach()) for _ in range(rc.run.warmup_steps + rc.run.timed_steps)]


@pytest.mark.parametrize("name", list(JOBS))
def test_loss_of_first_steps_matches_single_process(jobs, name):
    rc, results = jobs(name)
    reference = single_process_losses(rc)
    measured = parallel_losses(rc, results)
    assert len(measured) == len(reference) == 3
    assert max(reference) - min(reference) > 100 * LOSS_ATOL  # the check is not trivially met
    assert measured == pytest.approx(reference, abs=LOSS_ATOL)


@pytest.mark.parametrize("name", list(JOBS))
def test_profile_has_tier2_metrics_from_all_ranks(jobs, name):
    rc, results = jobs(name)
    profile = assemble_profile(rc, results, "cpu", "dram", {}, "gloo")
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    metrics = compute_metrics(profile, graph, Ceilings(1e11, 1e10, "dram"), rc.data_copies)
    assert profile.chips == rc.parallel.n_chips and profile.mode == "measure"
    assert len(profile.step_times_s) == rc.run.timed_steps
    assert 0 < metrics["tier2.scaling_efficiency"]
    assert 0 < metrics["tier2.comm_fraction"] <= 1
    assert 0 < metrics["tier1.load_imbalance"] <= 1
    assert {f"memory.peak_bytes.dram.rank{r}" for r in range(rc.parallel.n_chips)} <= set(metrics)
    assert metrics["distributed.loss_max_abs_diff"] < LOSS_ATOL
    kind = "stage" if rc.parallel.strategy == "pp" else "rank"
    assert profile.tags["subtask_kind"] == kind
    assert len(profile.subtasks) == (rc.parallel.degree if kind == "stage" else rc.parallel.n_chips)
    ops = {(e.strategy, e.op) for e in profile.comm}
    expected = {
        "dp": {("dp", "allreduce")},
        "tp": {("tp", "allreduce")},
        "tp_gqa": {("tp", "allreduce")},
        "pp": {("pp", "p2p"), ("pp", "bubble")},
        "pp_1f1b_x_dp": {("dp", "allreduce"), ("pp", "p2p"), ("pp", "bubble")},
        "pp_tied": {("pp", "p2p"), ("pp", "bubble")},
    }[name]
    assert ops == expected
    for strategy, op in expected - {("pp", "bubble")}:
        assert metrics[f"tier2.busbw_GBps.{'p2p' if op == 'p2p' else op}"] > 0
        assert metrics[f"tier2.comm_time_s.{strategy}"] > 0


def test_tp_counts_megatron_collectives(jobs):
    """2 all-reduces forward and 2 backward per block, each of batch * seq * hidden fp32 values."""
    rc, results = jobs("tp")
    profile = assemble_profile(rc, results, "cpu", "dram", {}, "gloo")
    (event,) = profile.comm
    assert event.count == 4 * rc.model.n_layers
    assert event.bytes == rc.run.batch_size * rc.model.seq_len * rc.model.hidden_size * 4


def test_pp_stages_hold_their_layers_and_measure_a_bubble(jobs):
    rc, results = jobs("pp")
    assert [r["role"]["layers"] for r in results] == [[0, 1], [1, 2]]
    profile = assemble_profile(rc, results, "cpu", "dram", {}, "gloo")
    bubble = next(e for e in profile.comm if e.op == "bubble")
    assert 0 < bubble.time_s < profile.median_step_s
    p2p = next(e for e in profile.comm if e.op == "p2p")
    micro = rc.run.batch_size // rc.parallel.micro_batches
    assert p2p.bytes == micro * rc.model.seq_len * rc.model.hidden_size * 4
    assert p2p.count == 2 * rc.parallel.micro_batches
