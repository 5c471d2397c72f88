"""The CPU model's kernel rates (platforms/cpu/knobs.py: attention_efficiency, gelu_element_flops): GELU priced
by its per-element tanh cost, attention at its own share of the peak; the GPU untouched."""

from __future__ import annotations

import pytest

from dabench.core.ceilings import Ceilings
from dabench.perfmodel.device import GELU_OPS, Kernels, Rates, _layer_time, kernels_for, predict
from dabench.perfmodel.knobs import knobs_for
from dabench.workload.opgraph import GELU_FLOPS_PER_ELEMENT, build_opgraph
from tests.perfmodel.helpers import run_config

PEAK, BW = 1e11, 2e10
SPEC = {"peak_flops": {"fp32": PEAK}, "memory": [{"name": "dram", "capacity_bytes": 1e10, "bandwidth_Bps": BW}]}


def _block(batch=16, hidden=128):
    rc = run_config(
        "cpu", model="tiny", precision="fp32", batch_size=batch, hw=SPEC, model_over={"hidden_size": hidden}
    )
    return rc, build_opgraph(rc.model, rc.run.batch_size, rc.precision).layer("block.0")


def _gelu_time(block, phase, kernels, launch=0.0):
    gelu = [op for op in block.ops if op.name in GELU_OPS and op.phase == phase]
    assert len(gelu) == 1
    layer = type(block)(block.name, block.kind, tuple(gelu), block.totals)
    return _layer_time(layer, (phase,), Rates(PEAK, BW, 1.0, 0.5, launch, kernels=kernels))[0], gelu[0]


@pytest.mark.parametrize("phase", ["fwd", "bwd"])
def test_gelu_is_priced_per_element_when_its_tanh_dominates(phase):
    _, block = _block()
    cost = 225.0
    t, op = _gelu_time(block, phase, Kernels(gelu_flops=cost))
    elements = op.flops / (GELU_FLOPS_PER_ELEMENT * (1 if phase == "fwd" else 2))
    assert elements == pytest.approx(16 * 128 * 4 * 128)  # batch x seq x ffn width of the tiny model
    assert t == pytest.approx(elements * cost / PEAK)
    off, _ = _gelu_time(block, phase, Kernels())
    assert off == pytest.approx(op.bytes / (BW * 0.5)) and t > off  # bytes only without the knob


def test_cheap_gelu_falls_back_to_the_memory_roof():
    _, block = _block()
    t, op = _gelu_time(block, "fwd", Kernels(gelu_flops=1e-3))
    assert t == pytest.approx(op.bytes / (BW * 0.5))


def test_attention_takes_its_own_share_of_the_peak():
    rc, _ = _block()
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    ceilings = Ceilings(PEAK, BW, "dram", "test")
    base = rc.hardware.options
    half = run_config(
        "cpu", model="tiny", precision="fp32", batch_size=16, hw=SPEC, options={**base, "attention_efficiency": 0.25}
    )
    full = run_config(
        "cpu", model="tiny", precision="fp32", batch_size=16, hw=SPEC, options={**base, "attention_efficiency": 0.5}
    )
    slow, fast = predict(half, graph, ceilings), predict(full, graph, ceilings)
    launches = sum(1 for layer in graph.layers for op in layer.ops if op.op_class == "attention")
    launch = knobs_for(full.hardware).launch_s * launches
    att_slow, att_fast = slow.class_times_s["attention"] - launch, fast.class_times_s["attention"] - launch
    assert att_slow == pytest.approx(2 * att_fast)  # compute-bound at seq 128: time ~ 1 / efficiency
    assert slow.class_times_s["matmul"] == pytest.approx(fast.class_times_s["matmul"])


def test_the_gpu_prices_no_cpu_kernels():
    assert kernels_for(knobs_for(run_config("cuda").hardware)) == Kernels(None, 0.0)
    cpu = kernels_for(knobs_for(run_config("cpu", precision="fp32").hardware))
    assert cpu.attention_eff and 0 < cpu.attention_eff < 1 and cpu.gelu_flops > GELU_FLOPS_PER_ELEMENT
