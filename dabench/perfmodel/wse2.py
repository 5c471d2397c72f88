"""Cerebras WSE-2 (CS-2): layer-pipelined kernels on the PE array, or weight streaming.

Layer-pipelined mapping (Model Zoo R1.x, the compile reports of the DABench-LLM artifact):

- Kernels, as the compile report names them: ``emb`` (embedding), per decoder block
  ``attention<i>`` (ln1, q/k/v, attention core, out-projection, residual) and two ``fc`` kernels
  (ln2 + fc1 + GELU; fc2 + residual), and ``mlm_loss`` (final norm, LM head, loss).
- Every kernel runs at once, each on its own PEs, and samples stream through them: the pipeline's
  rate is the slowest kernel's. A kernel with p PEs and w FLOPs per sample (forward + backward,
  plus its share of the weight update) runs at r = p * f * u / w samples/s, f = peak / PEs on the
  wafer (FLOP/s per PE), u = ``kernel_compute_utilization``.
- The compiler sizes kernels by their work (p proportional to w, so all rates match), within the
  PE budget of the compiled region (``compute_units[pe_region]``). A kernel cannot usefully take
  more than params / ``min_weights_per_pe`` PEs; when even that leaves most of the region idle
  (small models), the whole pipeline is replicated on the wafer (``options.replicas: auto``) and
  the replicas all-reduce their gradients over the on-wafer fabric every step (a ring whose hop
  bandwidth is the fabric bandwidth per PE times the sqrt(PEs) on a replica's edge).
- PE counts are whole numbers (rounded down), which is what keeps rates from matching exactly.
- Step = (samples per replica + 2K - 2) / rate: a sample crosses the K kernels forward and back
  (2K - 1 pipeline slots), so each step pays a pipeline fill and drain; then the weight update
  (each kernel updates its own weights), then the replica all-reduce.
- On-wafer SRAM is a hard limit: weights (fp32 master + 16-bit copy under mixed), gradients,
  AdamW moments, and the activations in flight: kernel j of K keeps
  (2 (K-1-j) + 1) * ``stash_samples_per_hop`` samples' saved activations (forward to backward).
  Beyond the capacity the run fails (``execution_mode: pipelined``) or falls back to weight
  streaming (``auto``).

Weight streaming (R2.x appliance; ``execution_mode: weight_streaming``, or ``auto`` when the
pipelined layout does not fit): one layer at a time owns the compiled region; its 16-bit weights
stream in from MemoryX and its gradients stream out to SwarmX at the system I/O bandwidth
(``memory[memoryx].bandwidth_Bps``). Per layer and direction, time = max(compute of the whole
batch, streaming). Activations of the micro-batch stay on the wafer (capacity-checked); the
weights and optimizer state live in MemoryX. ``parallel=dp`` (several CS-2s, weight streaming
only) splits the batch and reduces gradients in SwarmX as they stream (exposed cost: the
reduction tree's latency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dabench.config import RunConfig
from dabench.perfmodel.capacity import require_fits, training_state
from dabench.perfmodel.comm import ring_allreduce_s
from dabench.perfmodel.common import make_profile, peak_flops, require_strategy
from dabench.perfmodel.knobs import knobs_for
from dabench.perfmodel.knobs.wse2 import MODES, Wse2Knobs
from dabench.profile import CommEvent, Subtask, UnitUse
from dabench.status import CapacityError, UnsupportedError
from dabench.workload.opgraph import Layer, OpGraph

SOURCE = "perfmodel.wse2"
ATTENTION_OPS = ("ln1", "attn.q", "attn.k", "attn.v", "attn.sdpa", "attn.proj", "residual1")
FC_IN_OPS = ("ln2", "mlp.fc1", "mlp.gelu")
FC_OUT_OPS = ("mlp.fc2", "residual2")


@dataclass(frozen=True)
class KernelKind:
    """One kind of kernel; ``count`` identical copies (one per decoder block, or 1)."""

    name: str
    count: int
    train_flops: float  #: forward + backward FLOPs per sample
    opt_flops: float  #: weight-update FLOPs per step
    params: int
    saved_bytes: float  #: activations kept from forward to backward, per sample
    weight_flops: float  #: the part of train_flops done by ops that own weights (per sample)


@dataclass(frozen=True)
class Wse2Params:
    """The model's inputs: the typed knobs (perfmodel/knobs/wse2.py) plus the hardware spec's numbers."""

    region_pes: int
    wafer_pes: int
    pe_flops: float
    utilization: float
    min_weights_per_pe: float
    stash_samples_per_hop: float
    sram_bytes: float
    memoryx_Bps: float
    fabric_Bps: float
    fabric_latency_s: float
    mode: str
    replicas: int | None  #: None = auto


def knobs(rc: RunConfig) -> Wse2Params:
    hw = rc.hardware
    o: Wse2Knobs = knobs_for(hw)
    wafer = int(hw.units("pes"))
    return Wse2Params(
        region_pes=int(hw.units("pe_region")),
        wafer_pes=wafer,
        pe_flops=peak_flops(rc) / wafer,
        utilization=o.kernel_compute_utilization,
        min_weights_per_pe=o.min_weights_per_pe,
        stash_samples_per_hop=o.stash_samples_per_hop,
        sram_bytes=float(hw.memory_level("sram").capacity_bytes),
        memoryx_Bps=float(hw.memory_level("memoryx").bandwidth_Bps),
        fabric_Bps=o.fabric_bandwidth_Bps,
        fabric_latency_s=o.fabric_hop_latency_s,
        mode=o.execution_mode,
        replicas=None if o.replicas == "auto" else int(o.replicas),
    )


def _group(layer: Layer, names: tuple[str, ...] | None, batch: int) -> tuple[float, float, int, float, float]:
    """(train FLOPs per sample, opt FLOPs per step, params, saved bytes per sample, FLOPs per sample
    of the ops owning weights) of a layer's ops named ``names`` (all ops when None); the layer's
    AdamW update is split by params."""
    train = opt = saved = weighted = 0.0
    params = 0
    owners = {op.name for op in layer.ops if op.params}
    for op in layer.ops:
        if op.phase == "opt" or (names is not None and op.name not in names):
            continue
        train += op.flops
        params += op.params
        saved += op.saved_bytes
        if op.name in owners:
            weighted += op.flops
    if layer.params:
        opt = layer.totals.flops["opt"] * params / layer.params
    return train / batch, opt, params, saved / batch, weighted / batch


def kernel_kinds(graph: OpGraph) -> list[KernelKind]:
    b = graph.batch_size
    kinds = [KernelKind("emb", 1, *_group(graph.layer("embedding"), None, b))]
    if graph.model.n_layers:
        block = graph.layer("block.0")
        n = graph.model.n_layers
        kinds += [KernelKind("attention", n, *_group(block, ATTENTION_OPS, b)),
                  KernelKind("fc_in", n, *_group(block, FC_IN_OPS, b)),
                  KernelKind("fc_out", n, *_group(block, FC_OUT_OPS, b))]
    kinds.append(KernelKind("mlm_loss", 1, *_group(graph.layer("head"), None, b)))
    return kinds


def _stash_bytes(kinds: list[KernelKind], slots_per_hop: float) -> float:
    """Sum over kernels j (pipeline order: emb, then attention/fc_in/fc_out per block, mlm_loss)
    of saved bytes per sample * (2 (K-1-j) + 1) * slots per hop, summed in closed form per kind."""
    k_total = sum(kind.count for kind in kinds)
    n_blocks = next((kind.count for kind in kinds if kind.name == "attention"), 0)
    total = 0.0
    position = {"emb": [0], "mlm_loss": [k_total - 1]}
    for kind in kinds:
        if kind.name in position:
            hops = sum(2 * (k_total - 1 - j) + 1 for j in position[kind.name])
        else:
            offset = {"attention": 1, "fc_in": 2, "fc_out": 3}[kind.name]
            # positions j = offset + 3 i, i = 0..n-1: sum of 2 (K - 1 - j) + 1
            hops = n_blocks * (2 * (k_total - 1 - offset) + 1) - 6 * n_blocks * (n_blocks - 1) / 2
        total += kind.saved_bytes * hops * slots_per_hop
    return total


# ----------------------------------------------------------------------------- pipelined


def _pipelined(rc: RunConfig, graph: OpGraph, k: Wse2Params, kinds: list[KernelKind], samples: int):
    per_pe = k.pe_flops * k.utilization
    work = [kind.train_flops + kind.opt_flops / samples for kind in kinds]
    pes_per_rate = sum(kind.count * w / per_pe for kind, w in zip(kinds, work))  # PEs per (sample/s)
    # a kernel's weight-owning ops spread over at most params / min_weights_per_pe PEs; its other
    # work (the attention core) gets PEs in the same proportion, so its rate is capped at
    cap_rate = min(max(1.0, kind.params / k.min_weights_per_pe) * per_pe / max(kind.weight_flops, 1.0)
                   for kind in kinds)
    k_total = sum(kind.count for kind in kinds)
    grads = graph.params * graph.precision.param_bytes
    state = training_state(graph.params, graph.precision, compute_copy=True)
    stash = _stash_bytes(kinds, k.stash_samples_per_hop)

    def layout(replicas: int):
        """(step seconds, PEs per replica, PEs per kernel, all-reduce seconds) for ``replicas``."""
        # whole PEs, rounded up so that no kernel falls below the target rate; the budget keeps room
        # for the rounding (at most one PE per kernel)
        target = min(cap_rate, max(1e-9, k.region_pes / replicas - k_total) / pes_per_rate)
        pes = [max(1, math.ceil(target * w / per_pe)) for w in work]
        used = sum(kind.count * p for kind, p in zip(kinds, pes))
        rate = min(p * per_pe / w for p, w in zip(pes, work))
        allreduce = 0.0
        if replicas > 1:
            hop = _FabricLink(k.fabric_Bps / k.wafer_pes * math.sqrt(used), k.fabric_latency_s)
            allreduce = ring_allreduce_s(grads, replicas, hop)
        update = max(kind.opt_flops / (p * per_pe) for kind, p in zip(kinds, pes))
        step = (samples / replicas + 2 * k_total - 2) / rate + update + allreduce
        return step, used, pes, allreduce

    if k.replicas is not None:
        replicas = k.replicas
    else:
        # replicate while a copy of the pipeline at its capped rate fits the region and each
        # replica still gets a sample; keep the count that predicts the shortest step
        most = max(1, min(samples, int(k.region_pes // (cap_rate * pes_per_rate + k_total))))
        candidates = {most} | {2**i for i in range(most.bit_length()) if 2**i <= most}
        fitting = [r for r in sorted(candidates) if r * (state.total + stash) <= k.sram_bytes] or [1]
        replicas = min(fitting, key=lambda r: layout(r)[0])
    step, used, pes, allreduce = layout(replicas)
    if used * replicas > k.region_pes:
        raise CapacityError("wse2 compiled-region PEs", used * replicas, k.region_pes,
                            f"{replicas} replicas of {used} PEs; every kernel needs at least one PE")
    rates = [p * per_pe / w for p, w in zip(pes, work)]
    rate = min(rates)
    needed = replicas * (state.total + stash)
    require_fits("wse2 on-wafer SRAM", needed, k.sram_bytes,
                 f"pipelined, {replicas} replica(s) x ({state.describe()} + activations in flight "
                 f"{stash / 2**30:.2f} GiB over {sum(kind.count for kind in kinds)} kernels)")

    comm = [CommEvent("dp", "allreduce", grads, allreduce, replicas)] if replicas > 1 else []
    subtasks = []
    for kind, p, r in zip(kinds, pes, rates):
        for i in range(kind.count):
            name = kind.name if kind.count == 1 else f"{kind.name}{i + 1}"
            subtasks.append(Subtask(name, rate=r, units={"pes": float(p)}, flops=kind.train_flops * samples))
    extra = {
        "wse2.kernels": float(k_total),
        "wse2.replicas": float(replicas),
        "wse2.pipeline_rate_samples_per_s": rate * replicas,
        "wse2.fill_fraction": (2 * k_total - 2) / rate / step,
        "wse2.allreduce_s": allreduce,
        "wse2.sram_fraction": needed / k.sram_bytes,
        "wse2.kernel_cap_rate_samples_per_s": cap_rate,
    }
    units = {"pes": UnitUse(float(used * replicas), float(k.region_pes)),
             "wafer_pes": UnitUse(float(used * replicas), float(k.wafer_pes))}
    return step, units, subtasks, {"sram": needed}, comm, extra, "kernel"


@dataclass(frozen=True)
class _FabricLink:
    bandwidth_Bps: float
    latency_s: float


# ----------------------------------------------------------------------------- weight streaming


def _weight_streaming(rc: RunConfig, graph: OpGraph, k: Wse2Params, samples: int):
    """Layer by layer over the whole step's batch; activations checkpointed at layer inputs
    (assumption: every layer's forward is recomputed in its backward pass)."""
    per_region = k.region_pes * k.pe_flops * k.utilization
    e, w = graph.precision.compute_bytes, graph.precision.param_bytes
    scale = samples / graph.batch_size  # the graph is one micro-batch
    checkpoints = samples * rc.model.seq_len * rc.model.hidden_size * e * rc.model.n_layers
    working = max((layer.saved_bytes for layer in graph.layers), default=0.0)
    activations = checkpoints + working
    require_fits("wse2 on-wafer SRAM", activations, k.sram_bytes,
                 f"weight streaming keeps each layer's input for {samples} samples and one layer's "
                 f"activations for a micro-batch of {graph.batch_size} on the wafer")
    subtasks, total, streaming_bound = [], 0.0, 0
    for layer in graph.layers:
        fwd = scale * layer.totals.flops["fwd"] / per_region
        recompute = layer.totals.flops["fwd"] if layer.kind == "block" else 0.0
        bwd = scale * (layer.totals.flops["bwd"] + recompute) / per_region
        weights_in = layer.params * e / k.memoryx_Bps
        grads_out = layer.params * w / k.memoryx_Bps
        t = max(fwd, weights_in) + max(bwd, weights_in, grads_out)
        streaming_bound += weights_in > fwd
        total += t
        subtasks.append(Subtask(layer.name, time_s=t, units={"pes": float(k.region_pes)}))
    chips = rc.parallel.n_chips
    comm: list[CommEvent] = []
    if chips > 1:
        link = rc.hardware.link("inter")
        latency = math.ceil(math.log2(chips)) * (link.latency_s if link else 1e-5)
        comm.append(CommEvent("dp", "allreduce", graph.params * w, latency, chips))
        total += latency
    state = training_state(graph.params, graph.precision, compute_copy=True)
    extra = {"wse2.kernels": float(len(graph.layers)), "wse2.replicas": 1.0,
             "wse2.sram_fraction": activations / k.sram_bytes,
             "wse2.streaming_bound_layers": float(streaming_bound)}
    units = {"pes": UnitUse(float(k.region_pes), float(k.region_pes)),
             "wafer_pes": UnitUse(float(k.region_pes), float(k.wafer_pes))}
    return total, units, subtasks, {"sram": activations, "memoryx": state.total}, comm, extra, "layer"


# ----------------------------------------------------------------------------- predict


def _one_system(rc: RunConfig, graph: OpGraph, k: Wse2Params, samples: int):
    kinds = kernel_kinds(graph)
    if k.mode == "weight_streaming":
        return _weight_streaming(rc, graph, k, samples) + ("weight_streaming",)
    try:
        return _pipelined(rc, graph, k, kinds, samples) + ("pipelined",)
    except CapacityError:
        if k.mode == "auto":
            return _weight_streaming(rc, graph, k, samples) + ("weight_streaming",)
        raise


def predict(rc: RunConfig, graph: OpGraph):
    """Predicted Profile of one optimizer step on CS-2 system(s); CapacityError when the
    pipelined layout cannot fit the wafer (and ``execution_mode`` is not ``auto``)."""
    require_strategy(rc, ("none", "dp"), "a CS-2 runs the whole model on one wafer; several CS-2s are "
                     "data parallel (parallel=dp, weight streaming)")
    k = knobs(rc)
    chips = rc.parallel.n_chips
    if chips > 1 and k.mode == "pipelined":
        raise UnsupportedError("layer-pipelined execution runs on one CS-2 only (Model Zoo R1.x); set "
                               "hardware.options.execution_mode=weight_streaming for parallel=dp")
    per_system = rc.run.batch_size * rc.run.grad_accum
    step, units, subtasks, memory, comm, extra, kind, mode = _one_system(rc, graph, k, per_system)
    single = per_system / step if chips == 1 else per_system / (step - sum(e.time_s for e in comm))
    return make_profile(rc, SOURCE, step, subtask_kind=kind, units=units, subtasks=subtasks, memory=memory,
                        comm=comm, single_chip_samples_per_s=single if chips > 1 else None, extra=extra,
                        tags={"execution_mode": mode})
