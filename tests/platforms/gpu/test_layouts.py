"""The advisor's GPU layouts: data x tensor x pipeline parallel and fsdp in place of plain data
parallel, each spending exactly its GPUs, and the GPU model's own capacity check deciding what
fits. All numbers PREDICTED."""

import copy

import pytest

from dabench.advise.run import Request, _platform_base, model_section
from dabench.advise.search import Evaluator
from dabench.advise.space import build_space
from dabench.platforms.gpu.space import gpu_layout_overrides, gpu_layouts


def test_layouts_cover_tensor_pipeline_and_sharded_data():
    labels = gpu_layouts(16, heads=32, layers=32)
    assert "t1p1dp" in labels and "t8p2dpm4" in labels and "t2p1fsdp-full" in labels
    assert "t1p1fsdp-optimizer" in labels and "t1p16dpm1" in labels
    assert all(not (label.startswith("t16")) for label in labels)  # tensor parallelism stays in a node
    assert gpu_layouts(1, heads=32, layers=32) == ["t1p1dp"]  # no sharding over one GPU


@pytest.fixture(scope="module")
def predictor():
    model = model_section(Request(model="llama_7b", tokens=1e9))
    space = build_space("cuda", model, 16)
    base = copy.deepcopy(_platform_base("cuda", space.groups))
    base["model"] = model
    return space, Evaluator(space, base, 16)


@pytest.mark.parametrize("label", ["t1p1dp", "t2p1dp", "t1p1fsdp-grad_op", "t2p1fsdp-full", "t2p4dpm2", "t1p8dpm1"])
def test_every_layout_uses_its_gpus(predictor, label):
    _, predict = predictor
    values = {"run.batch_size": 8, "run.grad_accum": 1, "hardware.options.recompute": "full"}
    ev = predict("mixed", {**values, **gpu_layout_overrides(16 if "p8" in label else 8, label)})
    assert ev.ok, ev.reason
    assert ev.chips == (16 if "p8" in label else 8)


def test_sharding_fits_what_plain_data_parallel_cannot(predictor):
    _, predict = predictor
    values = {"run.batch_size": 4, "run.grad_accum": 1, "hardware.options.recompute": "none"}
    plain = predict("mixed", {**values, **gpu_layout_overrides(8, "t1p1dp")})
    sharded = predict("mixed", {**values, **gpu_layout_overrides(8, "t1p1fsdp-full")})
    assert plain.status == "capacity" and "hbm (per GPU)" in plain.reason and "optimizer" in plain.reason
    assert sharded.ok and sharded.metrics["memory.peak_bytes.hbm"] < 150e9
