"""The CUDA calibration points (points.csv MEG-*: Megatron-LM's published A100 throughputs) and
the GPU model's mechanisms they exercise: full activation recomputation, materialized attention,
tensor parallelism inside pipeline stages, and the interleaved 1F1B schedule. Nothing here needs a
GPU: the predictions price the datasheet peaks of conf/hardware/cuda_a100.yaml."""

from __future__ import annotations

import math
import re

import pytest

from dabench.config.compose import compose
from dabench.core.status import UnsupportedError
from dabench.fit.evaluate import point_config, predict_point
from dabench.fit.points import load_points
from dabench.fit.sources import fitted
from tests.perfmodel.helpers import predict, run_config

MEG = [p for p in load_points() if p.id.startswith("MEG-")]


def test_at_least_eight_sourced_gpu_training_points():
    assert len([p for p in MEG if p.metric in ("samples_per_s", "tokens_per_s")]) >= 8
    for p in MEG:
        assert p.platform == "cuda" and "hardware=cuda_a100" in p.overrides
        assert "Table" in p.source and "2104.04473" in p.source
        assert p.type == "D" and p.precision == "mixed"
    fit_ids = {i for e in fitted("cuda").values() for i in e.points}
    assert len(fitted("cuda")) < len([p for p in MEG if p.use == "fit"]) <= len(fit_ids)


@pytest.mark.parametrize("point", MEG, ids=[p.id for p in MEG])
def test_published_value_is_the_papers_teraflops_through_its_eq3(point):
    """The note's arithmetic: samples/s = GPUs x TFLOP/s per GPU / (96 s l h^2 (1 + s/6h + V/16lh))."""
    h, l = (int(x) for x in re.search(r"h=(\d+) l=(\d+)", point.note).groups())
    tflops = float(re.search(r"published ([\d.]+) teraFLOP/s", point.note).group(1))
    gpus = int(re.search(r"\((\d+) A100\)", point.layout).group(1))
    s, v = 2048, 51200
    per_sample = 96 * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
    assert point.published == pytest.approx(gpus * tflops * 1e12 / per_sample, rel=1e-3)
    cfg = point_config(point)
    assert (cfg["model"]["hidden_size"], cfg["model"]["n_layers"]) == (h, l)


@pytest.mark.parametrize("point", MEG, ids=[p.id for p in MEG])
def test_every_point_is_predicted_without_a_gpu(point, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    value = predict_point(point)
    assert math.isfinite(value) and value > 0
    assert abs(point.error(value)) <= point.tolerance


def test_a100_variant_inherits_the_options_but_its_generation():
    cuda, a100 = compose(["hardware=cuda"])["hardware"], compose(["hardware=cuda_a100"])["hardware"]
    assert a100["options"]["generation"] == "ampere" and cuda["options"]["generation"] == "hopper"
    same = {k: v for k, v in a100["options"].items() if k != "generation"}
    assert same == {k: v for k, v in cuda["options"].items() if k != "generation"} and a100["arch"] == "cuda"
    assert a100["peak_flops"]["mixed"] == 3.12e14 and a100["memory"][0]["bandwidth_Bps"] == 2.039e12
    assert {link["name"] for link in a100["links"]} == {"nvlink3", "infiniband_hdr"}


def _pp(**options):
    base = {"recompute": "full", "attention": "materialized", "stage_tensor_degree": 8}
    rc = run_config(
        "cuda",
        model="megatron_gpt",
        parallel="pp",
        batch_size=64,
        degree=4,
        replicas=2,
        micro_batches=16,
        options={**base, **options},
        model_over={"n_layers": 32, "hidden_size": 8192, "n_heads": 64},
    )
    return predict(rc)


def test_tensor_parallel_stages_count_their_gpus():
    profile, metrics = _pp()
    assert profile.chips == 8 * 4 * 2 and metrics["chips"] == 64


def test_interleaving_divides_the_bubble_and_multiplies_the_sends():
    plain, _ = _pp(pipeline_chunks=1)
    inter, _ = _pp(pipeline_chunks=2)
    bubble = {
        p: next(c.time_s for c in prof.comm if c.op == "bubble") for p, prof in (("plain", plain), ("inter", inter))
    }
    sends = {p: next(c.time_s for c in prof.comm if c.op == "p2p") for p, prof in (("plain", plain), ("inter", inter))}
    assert bubble["inter"] < 0.6 * bubble["plain"]
    assert sends["inter"] == pytest.approx(2 * sends["plain"], rel=1e-9)


def test_recompute_and_materialized_attention_cost_time():
    full, _ = _pp()
    lean, _ = _pp(recompute="none")
    flash, _ = _pp(attention="flash")
    assert full.step_times_s[0] > lean.step_times_s[0] > 0
    assert full.step_times_s[0] > flash.step_times_s[0] > 0


def test_stage_options_need_a_pipeline():
    rc = run_config("cuda", model="megatron_gpt", parallel="tp", degree=2, options={"stage_tensor_degree": 2})
    with pytest.raises(UnsupportedError, match="parallel=pp and fsdp"):
        predict(rc)
