"""Cerebras WSE-2 weight streaming (R2.x appliance): one layer at a time owns the whole wafer.

``weight_streaming(rc, graph, p, samples)`` -> (step s, units, subtasks, memory, comm, extra, "layer")
of one CS-2, as :mod:`dabench.platforms.wse.model` assembles it; CapacityError when a layer's working
set does not fit the wafer's SRAM.

Derivation: docs/perfmodel.md, "WSE-2 (Cerebras CS-2)", weight streaming.
"""

from __future__ import annotations

import math

from dabench.config.sections import RunConfig
from dabench.core.profile import CommEvent, Subtask, UnitUse
from dabench.core.status import CapacityError
from dabench.perfmodel.assemble import weight_params
from dabench.perfmodel.capacity import training_state
from dabench.platforms.wse.knobs import Wse2Params
from dabench.workload.opgraph import Layer, OpGraph


def streamed_params(layer: Layer, model) -> int:
    """Parameters a layer streams in from MemoryX (and whose gradients it streams out)."""
    return sum(weight_params(op, model) for op in layer.ops if op.phase == "fwd")


def micro_batch(rc: RunConfig, graph: OpGraph, sram_bytes: float, samples: int) -> tuple[int, float]:
    """(largest micro-batch whose activations fit the wafer, bytes it needs)."""
    e = graph.precision.compute_bytes
    m = rc.model
    per_sample = m.seq_len * m.hidden_size * e * m.n_layers  # every layer's input (checkpoints)
    per_sample += max((layer.saved_bytes for layer in graph.layers), default=0.0) / graph.batch_size
    # one layer's 16-bit weights and fp32 gradient in flight
    fixed = max((streamed_params(layer, m) for layer in graph.layers), default=0) * (e + graph.precision.param_bytes)
    room = sram_bytes - fixed
    mb = min(samples, int(room // per_sample)) if room > 0 else 0
    if mb < 1:
        raise CapacityError(
            "wse2 on-wafer SRAM",
            fixed + per_sample,
            sram_bytes,
            "weight streaming: one sample's layer inputs and one layer's working set do not fit",
        )
    micro = math.ceil(samples / mb)
    mb = math.ceil(samples / micro)  # even micro-batches
    return mb, fixed + mb * per_sample


def layer_pass_s(compute_s: float, weights_in_s: float, grads_out_s: float, latency_s: float) -> float:
    """One pass of one layer over one micro-batch: mapping latency, then compute overlapped with streaming."""
    return latency_s + max(compute_s, weights_in_s, grads_out_s)


def weight_streaming(rc: RunConfig, graph: OpGraph, p: Wse2Params, samples: int):
    k = p.knobs
    per_wafer = p.pe_flops * p.wafer_pes * k.ws_pe_efficiency
    e, w = graph.precision.compute_bytes, graph.precision.param_bytes
    mb, activations = micro_batch(rc, graph, p.sram_bytes, samples)
    micro = math.ceil(samples / mb)
    scale = mb / graph.batch_size  # the graph is one run micro-batch
    subtasks, total, streaming_bound, latency = [], 0.0, 0, 0.0
    for layer in graph.layers:
        fwd = scale * layer.totals.flops["fwd"] / per_wafer
        recompute = layer.totals.flops["fwd"] if layer.kind == "block" else 0.0
        bwd = scale * (layer.totals.flops["bwd"] * p.bwd_weight + recompute) / per_wafer
        streamed = streamed_params(layer, rc.model)
        weights_in = streamed * e / p.memoryx_Bps
        grads_out = streamed * w / p.memoryx_Bps
        lat = k.ws_layer_latency_s
        passes = layer_pass_s(fwd, weights_in, 0.0, lat) + layer_pass_s(bwd, weights_in, grads_out, lat)
        t = micro * passes * p.release_slowdown
        streaming_bound += weights_in > fwd
        latency += 2 * micro * lat
        total += t
        subtasks.append(Subtask(layer.name, time_s=t, units={"pes": float(p.wafer_pes)}))
    chips = rc.parallel.n_chips
    comm: list[CommEvent] = []
    if chips > 1:
        link = rc.hardware.link("inter")
        hops = math.ceil(math.log2(chips)) * (link.latency_s if link else 1e-5)
        comm.append(CommEvent("dp", "allreduce", graph.params * w, hops, chips))
        total += hops
    state = training_state(graph.params, graph.precision, compute_copy=True)
    extra = {
        "wse2.kernels": float(len(graph.layers)),
        "wse2.replicas": 1.0,
        "wse2.sram_fraction": activations / p.sram_bytes,
        "wse2.micro_batches": float(micro),
        "wse2.micro_batch": float(mb),
        "wse2.ws_pe_efficiency": k.ws_pe_efficiency,
        "wse2.layer_latency_share": latency / total,
        "wse2.streaming_bound_layers": float(streaming_bound),
    }
    units = {
        "pes": UnitUse(float(p.wafer_pes), float(p.wafer_pes)),
        "wafer_pes": UnitUse(float(p.wafer_pes), float(p.wafer_pes)),
    }
    return total, units, subtasks, {"sram": activations, "memoryx": state.total}, comm, extra, "layer"
