"""Cerebras WSE-2 (CS-2): layer-pipelined kernels on the PE array, or weight streaming.

``predict(rc, graph, ceilings)`` -> ``Profile(mode="predict")`` of one optimizer step, one subtask
per kernel (pipelined) or per layer (weight streaming, :mod:`.wse2_streaming`); ``ceilings`` are
unused (the model reads its spec). CapacityError when the layout does not fit the wafer's SRAM; ``parallel=tp|pp`` and
multi-system pipelined runs are unsupported. Knobs: platforms/wse/knobs.py.

Derivation: docs/perfmodel.md, "WSE-2 (Cerebras CS-2)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from dabench.config.sections import RunConfig
from dabench.core.ceilings import Ceilings
from dabench.core.profile import CommEvent, Subtask, UnitUse
from dabench.core.status import CapacityError, UnsupportedError
from dabench.perfmodel.assemble import make_profile, peak_flops, require_strategy
from dabench.perfmodel.capacity import require_fits, training_state
from dabench.perfmodel.comm import HopLink, ring_allreduce_s
from dabench.perfmodel.knobs import knobs_for
from dabench.platforms.wse.knobs import RELEASES, Wse2Knobs, Wse2Params
from dabench.platforms.wse.streaming import streamed_params as streamed_params  # re-exported
from dabench.platforms.wse.streaming import weight_streaming
from dabench.workload.opgraph import Layer, OpGraph

SOURCE = "perfmodel.wse2"
FC_IN_OPS = ("ln2", "mlp.fc1", "mlp.gelu")
FC_OUT_OPS = ("mlp.fc2", "residual2")
#: the paper's last depth that compiled (enc = dec = 72 in the artifact's layer sweep)
PAPER_MAX_LAYERS = 72
#: op classes with a per-PE rate (options.pe_flops_<class>)
PE_CLASSES = ("matmul", "attention", "loss", "embedding", "elementwise")
#: op classes priced at another class's rate (norms run in the element-wise kernels)
RATE_CLASS = {"norm": "elementwise"}
#: the activation op, fused into the fc kernel (the reports have no activation kernel)
ACTIVATION = "mlp.gelu"
#: ops whose saved input another op of the block already keeps (k and v read q's input, the output
#: projection the attention core's saved output, cross-attention k and v the one encoder output)
SAVED_ELSEWHERE = ("attn.k", "attn.v", "attn.proj", "xattn.k", "xattn.v", "xattn.proj")


def _kernel_of(op_name: str) -> str:
    """Which per-block kernel an op belongs to: attention (ln1, attn.*, residual1, xattn.*), fc_in, fc_out."""
    return "fc_in" if op_name in FC_IN_OPS else ("fc_out" if op_name in FC_OUT_OPS else "attention")


@dataclass(frozen=True)
class KernelKind:
    """One kind of kernel; ``count`` identical copies (one per block, or 1)."""

    name: str
    count: int
    train_flops: float  #: forward + backward FLOPs per sample (backward weighted for loss scaling)
    opt_flops: float  #: weight-update FLOPs per step
    params: int
    saved_bytes: float  #: activations kept from forward to backward, per sample
    pe_s: float  #: PE-seconds per sample: each op's FLOPs over its class's per-PE rate


def params_of(rc: RunConfig) -> Wse2Params:
    hw = rc.hardware
    k: Wse2Knobs = knobs_for(hw)
    wafer = hw.unit_count("pes")
    return Wse2Params(
        knobs=k,
        wafer_pes=wafer,
        pe_flops=peak_flops(rc) / wafer,
        pe_rates={c: getattr(k, f"pe_flops_{c}") for c in PE_CLASSES},
        sram_bytes=hw.capacity("sram"),
        memoryx_Bps=hw.bandwidth("memoryx"),
        bwd_weight=1.0 + (k.fp16_loss_scaling_overhead if rc.precision.name == "fp16" else 0.0),
        release_slowdown=release_slowdown(k),
    )


@lru_cache(maxsize=64)
def release_slowdown(k: Wse2Knobs) -> float:
    """How much longer a weight-streaming step takes on ``sdk_release`` than on the newest release."""
    speedups = {"2.0.2": k.release_speedup_2_0_2}
    later = RELEASES[RELEASES.index(k.sdk_release) + 1 :]
    return math.prod(speedups.get(release, 1.0) for release in later)


def pe_class(op) -> str:
    """Which per-PE rate an op runs at: the activation at the matmul rate, norms element-wise."""
    return "matmul" if op.name == ACTIVATION else RATE_CLASS.get(op.op_class, op.op_class)


def _groups(layer: Layer, batch: int, bwd_weight: float, rates: dict[str, float]) -> dict[str, list[float]]:
    """kernel -> [train FLOPs per sample, opt FLOPs per step, params, saved bytes per sample, PE-s per
    sample] of a layer's ops (all ops in one kernel unless the layer is a block); the update split by
    params. ``rates``: FLOP/s per PE by rate class (:func:`pe_class`)."""
    out: dict[str, list[float]] = {}
    block = layer.kind == "block"
    for op in layer.ops:
        if op.phase == "opt":
            continue
        name = _kernel_of(op.name) if block else layer.kind
        g = out.get(name) or out.setdefault(name, [0.0, 0.0, 0.0, 0.0, 0.0])
        flops = op.flops * (bwd_weight if op.phase == "bwd" else 1.0) / batch
        g[0] += flops
        g[2] += op.params
        g[3] += 0.0 if op.name in SAVED_ELSEWHERE else op.saved_bytes / batch
        g[4] += flops / rates[pe_class(op)]
    if layer.params:
        for g in out.values():
            g[1] = layer.totals.flops["opt"] * g[2] / layer.params
    return out


#: kernel kinds by (model, batch, precision, bwd_weight, rates): the op graph is a function of the first three
_KINDS: dict[tuple, list[KernelKind]] = {}


def kernel_kinds(graph: OpGraph, rates: dict[str, float], bwd_weight: float = 1.0) -> list[KernelKind]:
    key = (graph.model, graph.batch_size, graph.precision, bwd_weight, tuple(sorted(rates.items())))
    kinds = _KINDS.get(key)
    if kinds is not None:
        return kinds
    if len(_KINDS) >= 512:
        _KINDS.clear()
    b = graph.batch_size

    def kind(name: str, count: int, g: list[float]) -> KernelKind:
        return KernelKind(name, count, g[0], g[1], int(g[2]), g[3], g[4])

    kinds = [kind("emb", 1, _groups(graph.layer("embedding"), b, bwd_weight, rates)["embedding"])]
    if graph.model.n_layers:
        block = _groups(graph.layer("block.0"), b, bwd_weight, rates)
        kinds += [kind(name, graph.model.n_layers, block[name]) for name in ("attention", "fc_in", "fc_out")]
    kinds.append(kind("mlm_loss", 1, _groups(graph.layer("head"), b, bwd_weight, rates)["head"]))
    _KINDS[key] = kinds
    return kinds


def token_period_cycles(k: Wse2Knobs, model) -> float:
    """Cycles per token of the pipeline's pace: the widest vector one kernel passes the next per token
    (the LM head's logits, over the positions that reach the head), at ``fabric_values_per_cycle``."""
    logits = model.vocab_size * (model.head_tokens / model.seq_len if model.head_tokens else 1.0)
    widest = max(logits, model.ffn_size or model.ffn_mult * model.hidden_size, model.hidden_size)
    return widest / k.fabric_values_per_cycle


def token_ceiling(p: Wse2Params, model) -> float:
    """Samples/s the compiler sizes every kernel for: one token per :func:`token_period_cycles`."""
    return p.knobs.clock_hz / (model.seq_len * token_period_cycles(p.knobs, model))


def barriers_per_block(model) -> float:
    """Whole samples a block holds a token back, forward and backward (docs/perfmodel.md, "WSE-2")."""
    xfrac = model.cross_attention_layers / max(model.n_layers, 1)
    causal = 0.0 if model.head_tokens else (xfrac if model.cross_attention_layers else 1.0)
    return (1.0 - causal) + 1.0 + 2.0 * xfrac


def stash_bytes(kinds: list[KernelKind], seq_len: int, waits: float) -> float:
    """Activations held between each kernel's forward and backward pass, per model copy; ``kinds``
    ordered emb, per block attention, fc_in, fc_out, then the loss (docs/perfmodel.md, "WSE-2")."""
    blocks = next((kind.count for kind in kinds if kind.name == "attention"), 0)
    per_token = {kind.name: kind.saved_bytes / seq_len for kind in kinds}
    block = sum(per_token.get(name, 0.0) for name in ("attention", "fc_in", "fc_out"))
    # block j's kernels (j = 0 .. blocks-1) wait behind the barriers of blocks j+1 .. blocks-1
    waiting = seq_len * waits * (block * blocks * (blocks - 1) / 2 + per_token.get("emb", 0.0) * blocks)
    held = seq_len * (block * blocks + per_token.get("emb", 0.0) + per_token.get("mlm_loss", 0.0))
    return waiting + held


def _layout(p: Wse2Params, kinds: list[KernelKind], samples: int, replicas: int, grads: float, region: int, model):
    """(step s, per-replica PEs, PEs per kind, pipeline rate per replica, all-reduce s) in a region
    of ``region`` PEs (docs/perfmodel.md, "WSE-2")."""
    k = p.knobs
    work = [kind.pe_s for kind in kinds]
    total = sum(kind.count * w for kind, w in zip(kinds, work, strict=False))
    budget = k.region_fill * region / replicas
    ceiling = token_ceiling(p, model)
    rate = min(ceiling, budget / total)
    pes = [max(1, math.ceil(w * rate)) for w in work]
    used = sum(kind.count * n for kind, n in zip(kinds, pes, strict=False))
    for _ in range(50):  # whole PEs (rounded up): shrink the target until the rounded layout fits
        if used <= budget:
            break
        rate *= min(0.999, budget / used)
        pes = [max(1, math.ceil(w * rate)) for w in work]
        used = sum(kind.count * n for kind, n in zip(kinds, pes, strict=False))
    rate = min(ceiling, min(n / w for n, w in zip(pes, work, strict=False)))
    allreduce = 0.0
    if replicas > 1:
        hop = HopLink(k.fabric_bandwidth_Bps / p.wafer_pes * math.sqrt(used), k.fabric_hop_latency_s)
        allreduce = ring_allreduce_s(grads, replicas, hop)
    blocks = next((kind.count for kind in kinds if kind.name == "attention"), 0)
    fill = 0.0 if k.compile_estimate else blocks * barriers_per_block(model)
    step = (samples / replicas + fill) / rate + allreduce
    return step, used, pes, rate, allreduce


def _region(p: Wse2Params, kinds: list[KernelKind], model, per_copy: float) -> int:
    """The compiled region: the reports' patio when one copy fits it, else the whole wafer."""
    need = sum(kind.count * max(1, math.ceil(kind.pe_s * token_ceiling(p, model))) for kind in kinds)
    region = p.knobs.region_pes
    fits = need <= p.knobs.region_fill * region and per_copy <= p.sram_bytes * region / p.wafer_pes
    return region if fits else p.wafer_pes


def _pipelined(rc: RunConfig, graph: OpGraph, p: Wse2Params, kinds: list[KernelKind], samples: int):
    k = p.knobs
    seq = graph.model.seq_len
    grads = graph.params * graph.precision.param_bytes
    state = training_state(graph.params, graph.precision, compute_copy=True)
    model = graph.model
    stash = stash_bytes(kinds, seq, barriers_per_block(model) / 2)
    per_copy = state.total + stash
    region = _region(p, kinds, model, per_copy)
    region_sram = p.sram_bytes * region / p.wafer_pes
    if k.replicas == "auto":
        total = sum(kind.count * kind.pe_s for kind in kinds)
        most = max(1, min(samples, int(k.region_fill * region / (total * token_ceiling(p, model)))))
        candidates = sorted({most} | {2**i for i in range(most.bit_length()) if 2**i <= most})
        fitting = [r for r in candidates if r * per_copy <= region_sram] or [1]
        replicas = min(fitting, key=lambda r: _layout(p, kinds, samples, r, grads, region, model)[0])
    else:
        replicas = int(k.replicas)
    needed = replicas * per_copy
    if needed > region_sram:  # the reason is formatted only when it is needed
        require_fits(
            "wse2 on-wafer SRAM",
            needed,
            region_sram,
            f"pipelined, {replicas} replica(s) x ({state.describe()} + activations stashed "
            f"{stash / 2**30:.2f} GiB: each kernel holds its tokens until their gradient returns, "
            f"half a sample per barrier behind it) in {region:,} PEs' SRAM; the paper's "
            f"layer-pipelined runs failed beyond {PAPER_MAX_LAYERS} layers",
        )
    step, used, pes, rate, allreduce = _layout(p, kinds, samples, replicas, grads, region, model)
    if used * replicas > region:
        raise CapacityError(
            "wse2 compiled-region PEs",
            used * replicas,
            region,
            f"{replicas} replicas of {used} PEs; every kernel needs at least one PE",
        )
    ceiling = token_ceiling(p, model)
    comm = [CommEvent("dp", "allreduce", grads, allreduce, replicas)] if replicas > 1 else []
    subtasks = []
    for kind, n in zip(kinds, pes, strict=False):
        r = min(ceiling, n / max(kind.pe_s, 1e-18))
        for i in range(kind.count):
            name = kind.name if kind.count == 1 else f"{kind.name}{i + 1}"
            subtasks.append(Subtask(name, rate=r, units={"pes": float(n)}, flops=kind.train_flops * samples))
    k_total = sum(kind.count for kind in kinds)
    extra = {
        "wse2.kernels": float(k_total),
        "wse2.replicas": float(replicas),
        "wse2.region_pes": float(region),
        "wse2.pipeline_rate_samples_per_s": rate * replicas,
        "wse2.token_bound": float(rate >= ceiling * (1 - 1e-9)),
        "wse2.allreduce_s": allreduce,
        "wse2.stash_bytes": stash,
        "wse2.sram_fraction": needed / region_sram,
        "wse2.active_pes_fraction": used * replicas / region,
    }
    units = {
        "pes": UnitUse(float(used * replicas), float(region)),
        "wafer_pes": UnitUse(float(used * replicas), float(p.wafer_pes)),
    }
    return step, units, subtasks, {"sram": needed}, comm, extra, "kernel"


def _one_system(rc: RunConfig, graph: OpGraph, p: Wse2Params, samples: int):
    if p.knobs.execution_mode == "weight_streaming":
        return weight_streaming(rc, graph, p, samples) + ("weight_streaming",)
    try:
        return _pipelined(rc, graph, p, kernel_kinds(graph, p.pe_rates, p.bwd_weight), samples) + ("pipelined",)
    except CapacityError as error:
        if p.knobs.execution_mode == "auto":
            return weight_streaming(rc, graph, p, samples) + ("weight_streaming",)
        error.reason = (
            f"{error.reason}; models that do not fit layer-pipelined train in weight streaming "
            f"(Model Zoo R2.x): hardware.options.execution_mode=weight_streaming, or auto to stream "
            f"only what does not fit"
        )
        error.args = (error.reason,)
        raise


def predict(rc: RunConfig, graph: OpGraph, ceilings: Ceilings):
    """Predicted Profile of one optimizer step on CS-2 system(s) (module docstring)."""
    require_strategy(
        rc,
        ("none", "dp"),
        "a CS-2 runs the whole model on one wafer; several CS-2s are data parallel (parallel=dp, weight streaming)",
    )
    p = params_of(rc)
    chips = rc.parallel.n_chips
    if chips > 1 and p.knobs.execution_mode == "pipelined":
        raise UnsupportedError(
            "layer-pipelined execution runs on one CS-2 only (Model Zoo R1.x); set "
            "hardware.options.execution_mode=weight_streaming for parallel=dp"
        )
    per_system = rc.run.batch_size * rc.run.grad_accum
    step, units, subtasks, memory, comm, extra, kind, mode = _one_system(rc, graph, p, per_system)
    single = per_system / step if chips == 1 else per_system / (step - sum(e.time_s for e in comm))
    return make_profile(
        rc,
        SOURCE,
        step,
        subtask_kind=kind,
        units=units,
        subtasks=subtasks,
        memory=memory,
        comm=comm,
        single_chip_samples_per_s=single if chips > 1 else None,
        extra=extra,
        tags={"execution_mode": mode},
    )
