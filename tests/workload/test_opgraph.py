"""The op graph's FLOPs against torch's own counter on the real module."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from dabench.config.sections import ModelConfig, PrecisionConfig
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
        (ModelConfig("gqa", 2, 64, 8, 32, 256, n_kv_heads=2), 2),
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


def test_a_tied_head_shares_the_token_table_in_the_module():
    """tie_embeddings: the LM head's weight is the embedding's table (one parameter, the op graph's
    count), and both uses add to its gradient."""
    cfg = ModelConfig("t", 2, 64, 4, 16, 300, tie_embeddings=True)
    torch.manual_seed(0)
    model = DecoderStack.from_config(cfg)
    assert model.head.lm_head.weight is model.embedding.tok.weight
    assert build_opgraph(cfg, 1, FP32).params == sum(p.numel() for p in model.parameters())
    ids, targets = synthetic_batch(2, cfg.seq_len, cfg.vocab_size, seed=0)
    model(ids, targets).backward()
    table_grad = model.embedding.tok.weight.grad.clone()
    unused = torch.ones(cfg.vocab_size, dtype=torch.bool)
    unused[ids.flatten()] = False  # rows no input token looks up: only the head's gradient reaches them
    assert unused.any() and table_grad[unused].abs().sum() > 0


def test_gpt2_small_module_has_gpt2s_parameter_count():
    """The shipped gpt2_small config builds Hugging Face GPT-2 small's 124,439,808 parameters (tied
    head); the op graph counts the same."""
    model_cfg, precision = _variant("gpt2_small")
    with torch.device("meta"):  # shapes only: nothing is allocated or initialised
        model = DecoderStack.from_config(model_cfg)
    assert sum(p.numel() for p in model.parameters()) == 124_439_808
    assert build_opgraph(model_cfg, 1, precision).params == 124_439_808


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


def _variant(name, **over):
    import yaml

    from dabench.config.build import build_model, build_precision
    from tests.conftest import CONF

    section = {**yaml.safe_load((CONF / "model" / f"{name}.yaml").read_text()), **over}
    return build_model(section), build_precision(
        {"name": "mixed", "param_dtype": "fp32", "compute_dtype": "bf16", "autocast": True}
    )


def test_calibration_workloads_have_their_published_parameter_counts():
    from dabench.workload.opgraph import build_opgraph

    # llama_70b: the released Llama-2-70b-hf's 68,976,648,192 (RMSNorm weights, no biases)
    expected = {
        "llama_7b": 6.74e9,
        "gptj_6b": 6.05e9,
        "bert_large": 3.35e8,
        "gpt_13b": 1.285e10,
        "llama_70b": 6.8977e10,
    }
    for name, params in expected.items():
        model, precision = _variant(name)
        assert build_opgraph(model, 1, precision).params == pytest.approx(params, rel=0.01), name


def test_model_variants_change_what_the_op_graph_prices():
    from dabench.workload.opgraph import build_opgraph

    base_model, precision = _variant("gpt2_small", tie_embeddings=False)  # the shipped GPT-2 configs tie
    base = build_opgraph(base_model, 2, precision)
    h, v = base_model.hidden_size, base_model.vocab_size
    tied = build_opgraph(_variant("gpt2_small", tie_embeddings=True)[0], 2, precision)
    assert base.params - tied.params == v * h and tied.flops("fwd") == base.flops("fwd")
    rotary = build_opgraph(_variant("gpt2_small", tie_embeddings=False, position="rotary")[0], 2, precision)
    assert base.params - rotary.params == base_model.seq_len * h
    cross = build_opgraph(_variant("gpt2_small", tie_embeddings=False, cross_attention_layers=6)[0], 2, precision)
    extra = 6 * (4 * h * h + 4 * h + 2 * h)  # q, k, v, out (+ biases) and a LayerNorm per decoder block
    assert cross.params - base.params == pytest.approx(extra, abs=12)
    mlm = build_opgraph(_variant("gpt2_small", tie_embeddings=False, head_tokens=128)[0], 2, precision)
    assert mlm.layer("head").totals.flops["fwd"] < base.layer("head").totals.flops["fwd"] / 4


def test_the_measured_workload_refuses_variants_it_does_not_build():
    from dabench.core.status import UnsupportedError
    from dabench.workload.model import DecoderStack

    with pytest.raises(UnsupportedError, match="swiglu"):
        DecoderStack.from_config(_variant("llama_7b")[0])


GQA = ModelConfig("g", 1, 64, 8, 16, 100, n_kv_heads=2)  # head_dim 8: K and V are 2 x 8 = 16 wide


def test_grouped_query_attention_by_hand():
    """batch 2 x seq 16 = 32 tokens, hidden 64, K/V width 16, fp32 (4 bytes everywhere)."""
    graph = build_opgraph(GQA, 2, FP32)
    ops = {(op.name, op.phase): op for op in graph.layer("block.0").ops}
    assert ops["attn.q", "fwd"].params == 64 * 64 + 64
    for name in ("attn.k", "attn.v"):
        assert ops[name, "fwd"].params == 64 * 16 + 16
        assert ops[name, "fwd"].flops == 2 * 32 * 64 * 16
        assert ops[name, "bwd"].flops == 4 * 32 * 64 * 16
        assert ops[name, "fwd"].bytes == (32 * 64 + 1040 + 32 * 16) * 4
    act, kv = 32 * 64, 32 * 16
    sdpa_fwd, sdpa_bwd = ops["attn.sdpa", "fwd"], ops["attn.sdpa", "bwd"]
    assert sdpa_fwd.flops == 4 * 2 * 16 * 16 * 64 and sdpa_bwd.flops == 2 * sdpa_fwd.flops  # as with 8 K/V heads
    assert sdpa_fwd.bytes == (2 * act + 2 * kv) * 4  # reads q, k, v; writes out
    assert sdpa_fwd.saved_bytes == (2 * act + 2 * kv) * 4 + 2 * 8 * 16 * 4  # q, k, v, out and the fp32 lse
    assert sdpa_bwd.bytes == (4 * act + 4 * kv) * 4
    mha = build_opgraph(ModelConfig("g", 1, 64, 8, 16, 100), 2, FP32)
    assert mha.params - graph.params == 2 * (64 * 64 + 64 - 1040)
    assert mha.layer("block.0").saved_bytes - graph.layer("block.0").saved_bytes == 2 * (act - kv) * 4


def test_n_kv_heads_equal_to_n_heads_is_plain_multi_head_attention():
    for model in (ModelConfig("g", 2, 64, 8, 16, 100), _variant("llama_7b")[0]):
        same = ModelConfig(**{**vars(model), "n_kv_heads": model.n_heads})
        for batch in (1, 3):
            assert build_opgraph(same, batch, FP32).layers == build_opgraph(model, batch, FP32).layers


def test_a_measured_gqa_step_trains_the_op_graphs_parameters():
    """The measured torch model (K and V n_kv_heads wide, repeated for SDPA) has the op graph's
    parameter count and trains: one measured CPU run of a tiny GQA stack."""
    from dabench import run

    cfg = ModelConfig("g", 2, 64, 8, 16, 100, n_kv_heads=2)
    torch.manual_seed(0)
    model = DecoderStack.from_config(cfg)
    assert model.blocks[0].attn.k.weight.shape == (16, 64)
    assert sum(p.numel() for p in model.parameters()) == build_opgraph(cfg, 1, FP32).params
    result = run(
        [
            "model=tiny",
            "+model.n_kv_heads=2",
            "hardware=cpu",
            "hardware.mode=measure",
            "run.timed_steps=2",
            "run.warmup_steps=1",
            "run.profile_subtasks=false",
            "tracking.enabled=false",
        ]
    )
    assert result.status.value == "ok", result.reason
    assert result.run_config.model.kv_heads == 2
    assert result.metrics["work.params"] == build_opgraph(result.run_config.model, 1, FP32).params


@pytest.mark.parametrize(
    "override,field",
    [
        ("+model.n_kv_heads=3", "model.n_kv_heads"),
        ("+model.n_kv_heads=8", "model.n_kv_heads"),
        ("+model.n_kv_heads=0", "model.n_kv_heads"),
    ],
)
def test_bad_n_kv_heads_is_refused(override, field):
    from dabench import predict

    r = predict(["model=tiny", override])  # tiny: 4 heads
    assert r.status.value == "invalid_config" and field in r.reason


def test_tensor_parallel_degree_must_divide_the_kv_heads():
    from dabench import predict

    r = predict(["model=tiny", "+model.n_kv_heads=2", "parallel=tp", "parallel.degree=4", "hardware=cuda"])
    assert r.status.value == "invalid_config" and "parallel.degree" in r.reason and "n_kv_heads=2" in r.reason
    assert (
        predict(
            [
                "model=tiny",
                "+model.n_kv_heads=2",
                "parallel=tp",
                "parallel.degree=2",
                "hardware=cuda",
                "hardware.mode=predict",
            ]
        ).status.value
        == "ok"
    )
