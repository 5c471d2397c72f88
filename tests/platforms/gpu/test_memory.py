"""The GPU model's memory per GPU (perfmodel/device_memory.py), its capacity check, sharded data
parallel (parallel=fsdp) and the per-generation efficiencies. No GPU needed: predictions only."""

from __future__ import annotations

import math

import pytest

from dabench import predictor
from dabench.api import predict as api_predict
from dabench.config.compose import compose
from dabench.core.status import CapacityError
from dabench.fit.evaluate import point_config
from dabench.fit.points import load_points
from tests.perfmodel.helpers import predict, run_config

PUBLISHED = [p for p in load_points() if p.platform == "cuda" and p.use != "excluded"]
PARTS = ("weights", "gradients", "optimizer", "activations", "other", "margin")


def _llama(parallel="none", batch_size=2, precision="mixed", hardware="cuda", options=None, **over):
    rc = run_config(hardware, "llama_7b", precision, parallel, batch_size, options=options, **over)
    return predict(rc)


def test_a_model_above_the_gpu_memory_is_a_capacity_result_with_its_breakdown():
    r = api_predict(["hardware=cuda", "model=llama_7b", "run.batch_size=8", "precision=fp32"])
    assert r.status == "capacity"
    for part in ("weights", "gradients", "optimizer", "activations", "margin"):
        assert part in r.reason
    assert "hbm (per GPU)" in r.reason


@pytest.mark.parametrize("point", PUBLISHED, ids=[p.id for p in PUBLISHED])
def test_a_configuration_a_published_run_trained_is_not_refused(point):
    metrics = predictor.predict(point_config(point)).metrics  # CapacityError would fail the test
    capacity = metrics["memory.peak_bytes.hbm"]
    assert 0 < capacity


def test_the_parts_sum_to_the_peak_and_are_logged():
    _, metrics = _llama()
    parts = [metrics[f"memory.part_bytes.hbm.{part}"] for part in PARTS]
    assert sum(parts) == pytest.approx(metrics["memory.peak_bytes.hbm"], rel=1e-12)
    assert metrics["memory.part_bytes.hbm.margin"] == pytest.approx(0.05 / 1.05 * sum(parts), rel=1e-9)


def test_sharding_stages_keep_less_state_per_gpu():
    parts = {}
    for name, over in {
        "dp": {"parallel": "dp", "degree": 8},
        "optimizer": {"parallel": "fsdp", "degree": 8, "sharding": "optimizer"},
        "grad_op": {"parallel": "fsdp", "degree": 8, "sharding": "grad_op"},
        "full": {"parallel": "fsdp", "degree": 8, "sharding": "full"},
    }.items():
        _, metrics = _llama(**over)
        parts[name] = {p: metrics[f"memory.part_bytes.hbm.{p}"] for p in PARTS}
    assert parts["optimizer"]["optimizer"] == pytest.approx(parts["dp"]["optimizer"] / 8)
    assert parts["grad_op"]["gradients"] < parts["optimizer"]["gradients"] == parts["dp"]["gradients"]
    assert parts["full"]["weights"] < parts["grad_op"]["weights"] == parts["dp"]["weights"]
    assert parts["full"]["activations"] == parts["dp"]["activations"]


def test_recompute_and_flash_attention_shrink_activations():
    acts = {}
    for name, options in {
        "flash": {},
        "materialized": {"attention": "materialized"},
        "recompute": {"recompute": "full"},
    }.items():
        _, metrics = predict(run_config("cuda", "gpt2_small", "mixed", "none", 4, options=options))
        acts[name] = metrics["memory.part_bytes.hbm.activations"]
    assert acts["recompute"] < acts["flash"] < acts["materialized"]


def test_fsdp_prices_its_gathers_and_reduce_scatters():
    full, m_full = _llama(parallel="fsdp", degree=64, sharding="full", hardware="cuda_h100")
    grad_op, _ = _llama(parallel="fsdp", degree=64, sharding="grad_op", hardware="cuda_h100")
    kinds = {(c.strategy, c.op) for c in full.comm}
    assert {("fsdp", "allgather"), ("fsdp", "reduce_scatter")} <= kinds
    gathers = {
        name: sum(c.count for c in prof.comm if c.op == "allgather") for name, prof in (("full", full), ("g", grad_op))
    }
    assert gathers["full"] == 2 * gathers["g"]
    assert m_full["chips"] == 64 and math.isfinite(m_full["throughput.tokens_per_s"])


def test_fsdp_with_tensor_parallel_counts_its_gpus():
    profile, metrics = _llama(parallel="fsdp", degree=4, options={"stage_tensor_degree": 2})
    assert profile.chips == 8 and metrics["chips"] == 8


def test_each_generation_prices_at_its_own_efficiencies():
    _, a100 = _llama(hardware="cuda_a100", parallel="fsdp", degree=8)
    _, h100 = _llama(hardware="cuda_h100", parallel="fsdp", degree=8)
    options = compose(["hardware=cuda"])["hardware"]["options"]
    assert a100["perfmodel.compute_efficiency_term"] == options["ampere_compute_efficiency"]
    assert h100["perfmodel.compute_efficiency_term"] == options["compute_efficiency"]


def test_capacity_error_is_raised_by_the_model_itself():
    rc = run_config("cuda_a100", "llama_7b", "fp32", "none", 8)
    from dabench.host.ceilings import resolve_ceilings
    from dabench.perfmodel import get_predictor
    from dabench.workload.opgraph import build_opgraph

    with pytest.raises(CapacityError):
        get_predictor("cuda")(rc, build_opgraph(rc.model, 8, rc.precision), resolve_ceilings(rc.hardware, rc.precision))
