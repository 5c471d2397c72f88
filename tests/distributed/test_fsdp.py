"""Measured sharded data parallel (parallel=fsdp) on gloo: torch's FSDP2 for full and grad_op,
DDP with ZeroRedundancyOptimizer for optimizer. The loss of the first steps equals the single
process's, and the Profile says which collectives it timed."""

import pytest
import torch

from dabench.config.build import build_run_config
from dabench.distributed.assemble import assemble_profile, parallel_losses
from dabench.distributed.run import run_ranks
from tests.conftest import composed
from tests.distributed.test_parallel_training import LOSS_ATOL, SHORT, single_process_losses

pytestmark = pytest.mark.slow

SHARDINGS = ("full", "grad_op", "optimizer")


@pytest.fixture(scope="module")
def jobs():
    cache = {}

    def get(sharding):
        if sharding not in cache:
            rc = build_run_config(
                composed(["parallel=fsdp", "parallel.degree=2", f"parallel.sharding={sharding}", *SHORT])
            )
            cache[sharding] = rc, run_ranks(rc, torch.device("cpu"), baseline=False)
        return cache[sharding]

    return get


@pytest.mark.parametrize("sharding", SHARDINGS)
def test_sharded_training_matches_the_single_process(jobs, sharding):
    rc, results = jobs(sharding)
    reference = single_process_losses(rc)
    measured = parallel_losses(rc, results)
    assert max(reference) - min(reference) > 100 * LOSS_ATOL
    assert measured == pytest.approx(reference, abs=LOSS_ATOL)
    assert {r["strategy"] for r in results} == {"fsdp"}


@pytest.mark.parametrize("sharding", SHARDINGS)
def test_profile_names_only_the_collectives_it_timed(jobs, sharding):
    rc, results = jobs(sharding)
    profile = assemble_profile(rc, results, "cpu", "dram", {}, "gloo")
    assert profile.chips == 2 and len(profile.subtasks) == 2
    ops = {(e.strategy, e.op) for e in profile.comm}
    if sharding == "optimizer":
        assert ops == {("dp", "allreduce")}
    else:
        assert ops == set() and profile.extra_metrics["distributed.comm_timed"] == 0.0
