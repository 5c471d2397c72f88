"""The op graph's FLOPs against torch's own counter on the real module."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from dabench.config import ModelConfig, PrecisionConfig
from dabench.workload.model import DecoderStack, synthetic_batch
from dabench.workload.opgraph import build_opgraph

FP32 = PrecisionConfig("fp32", "fp32", "fp32", False)


def torch_counted_flops(model_cfg: ModelConfig, batch: int) -> tuple[int, int]:
    """(forward, forward+backward) FLOPs as FlopCounterMode counts them. The math SDPA kernel is
    used because torch's counter has no formula for the CPU flash kernel."""
    torch.manual_seed(0)
    model = DecoderStack.from_config(model_cfg)
    ids, targets = synthetic_batch(batch, model_cfg.seq_len, model_cfg.vocab_size, seed=0)
    with sdpa_kernel(SDPBackend.MATH):
        with FlopCounterMode(display=False) as fwd_counter:
            loss = model(ids, targets)
        with FlopCounterMode(display=False) as bwd_counter:
            loss.backward()
    return fwd_counter.get_total_flops(), fwd_counter.get_total_flops() + bwd_counter.get_total_flops()


@pytest.mark.parametrize(
    "model_cfg,batch",
    [
        (ModelConfig("a", 2, 64, 4, 32, 256), 2),
        (ModelConfig("b", 3, 96, 3, 48, 500, ffn_mult=2), 3),
        (ModelConfig("c", 1, 128, 8, 128, 1024), 1),
    ],
)
def test_matmul_and_attention_flops_match_torch_counter_within_2pct(model_cfg, batch):
    graph = build_opgraph(model_cfg, batch, FP32)
    counted_fwd, counted_total = torch_counted_flops(model_cfg, batch)
    by_class_fwd = graph.by_class(("fwd",))
    by_class_all = graph.by_class(("fwd", "bwd"))
    ours_fwd = by_class_fwd["matmul"][0] + by_class_fwd["attention"][0]
    ours_total = by_class_all["matmul"][0] + by_class_all["attention"][0]
    assert ours_fwd == pytest.approx(counted_fwd, rel=0.02)
    assert ours_total == pytest.approx(counted_total, rel=0.02)


def test_params_match_the_module():
    cfg = ModelConfig("d", 3, 64, 4, 16, 300)
    assert build_opgraph(cfg, 1, FP32).params == sum(p.numel() for p in DecoderStack.from_config(cfg).parameters())


def test_work_scales_with_layers_and_batch():
    one = build_opgraph(ModelConfig("e", 1, 64, 4, 16, 300), 2, FP32)
    two = build_opgraph(ModelConfig("e", 2, 64, 4, 16, 300), 2, FP32)
    block = two.layer("block.1")
    assert two.flops() - one.flops() == pytest.approx(block.flops)
    doubled = build_opgraph(ModelConfig("e", 1, 64, 4, 16, 300), 4, FP32)
    assert doubled.flops("fwd") == pytest.approx(2 * one.flops("fwd"))
    assert doubled.flops("opt") == one.flops("opt")


def test_half_precision_moves_fewer_bytes_for_same_flops():
    cfg = ModelConfig("f", 2, 64, 4, 16, 300)
    fp16 = build_opgraph(cfg, 2, PrecisionConfig("fp16", "fp16", "fp16", False))
    fp32 = build_opgraph(cfg, 2, FP32)
    assert fp16.flops() == fp32.flops()
    assert fp16.bytes() < fp32.bytes()
