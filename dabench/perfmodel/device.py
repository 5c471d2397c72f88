"""CPU, GPU and Gaudi: roofline models of the targets dabench also measures (for ``hardware.mode=validate``).

``predict(rc, graph, ceilings)`` -> ``Profile(mode="predict")`` of one optimizer step priced at
``ceilings``, with the dp / tp / pp / fsdp layouts; CapacityError above an accelerator's HBM or, on a CPU,
this machine's RAM (all its ranks); UnsupportedError for a CPU without a calibration. Knobs:
platforms/{cpu,gpu,gaudi}/knobs.py.

Derivation: docs/perfmodel.md, "CPU and GPU (`device.py`)".
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

from dabench.config.sections import FP8, RunConfig
from dabench.core.ceilings import Ceilings
from dabench.core.platforms import platform
from dabench.core.profile import CommEvent, Subtask, UnitUse
from dabench.core.status import CapacityError, UnsupportedError
from dabench.host.ceilings import is_calibrated, tf32_enabled
from dabench.host.info import cpu_native_precision, meminfo_bytes
from dabench.perfmodel.assemble import layer_groups, make_profile
from dabench.perfmodel.comm import allgather_s, group_link, p2p_s, reduce_scatter_s, ring_allreduce_s
from dabench.perfmodel.device_memory import memory_per_chip
from dabench.perfmodel.knobs import knobs_for
from dabench.perfmodel.pipeline import PipelineTiming, pipeline_time
from dabench.workload.opgraph import GELU_FLOPS_PER_ELEMENT, Layer, OpGraph

log = logging.getLogger(__name__)

SPLIT_CLASSES = ("matmul", "attention", "embedding", "loss")

#: HBM bytes per element of the seq x seq score matrix when attention materializes it
#: (``attention: materialized``), in units of the compute dtype's size e plus 1-byte dropout masks.
#: Forward: write S = QK^T, the fused scale-mask-softmax reads S and writes P, dropout reads P and
#: writes P' and its mask, PV reads P' (6e + 1). Backward: write dP', dropout's backward reads dP'
#: and the mask and writes dP, softmax's backward reads P and dP and writes dS, dQ and dK read dS,
#: dV reads P' (9e + 1).
SCORE_PASSES = {"fwd": (6, 1), "bwd": (9, 1)}

#: a GPU generation no calibration point fitted (blackwell, cdna3) has its GEMMs priced at the middle
#: of compute_efficiency's fit bounds [0.2, 1.0] (conf/hardware/sources/cuda.yaml), as cross-validation
#: prices a generation whose points it left out (fit/refit.py, start="middle"); never another generation's fit
UNFITTED_EFFICIENCY = 0.6

#: linear layers whose input width (K) tensor parallelism splits (Megatron's row-parallel ones); the
#: others split their output width (N)
ROW_PARALLEL = ("proj", "fc2")

#: op names whose element-wise kernel evaluates a transcendental per element (GELU's tanh)
GELU_OPS = ("mlp.gelu", "head.gelu")


@dataclass(frozen=True)
class Kernels:
    """Kernel rates priced apart from the roofline (platforms/cpu/knobs.py, gaudi/knobs.py; off on
    the GPU): ``attention_eff`` replaces ``compute_efficiency`` for attention ops when set;
    ``gelu_flops`` > 0 prices a GELU element (forward or backward) at that many matmul FLOPs of the
    peak; ``vector_flops`` > 0 is the FLOP/s of a separate engine that runs every op but matmul and
    attention (Gaudi's tensor processor cores) in place of the matmul peak."""

    attention_eff: float | None = None
    gelu_flops: float = 0.0
    vector_flops: float = 0.0


def kernels_for(k) -> Kernels:
    return Kernels(
        getattr(k, "attention_efficiency", None),
        float(getattr(k, "gelu_element_flops", 0.0)),
        float(getattr(k, "vector_flops", 0.0)),
    )


@dataclass(frozen=True)
class Rates:
    """What prices an op: ceilings, efficiencies, launch seconds, the small-matmul knee, the compute
    dtype's bytes, the CPU's kernel rates, the GPU's SMs and GEMM output tile (0: no quantization) and
    the decoder blocks' GEMM peak under ``precision=fp8`` (0: ``peak``)."""

    peak: float
    bw: float
    ce: float
    me: float
    launch: float
    half_flops: float = 0.0
    e: int = 2
    kernels: Kernels = Kernels()
    sms: int = 0
    tile: tuple[int, int] = (0, 0)
    fp8_peak: float = 0.0

    def quantized(self, m: float, n: float) -> float:
        """Share of the SMs' tile slots an m x n GEMM output fills: its tiles in waves of one per SM,
        the last tile of each dimension and the last wave part empty (docs/perfmodel.md)."""
        tm, tn = self.tile
        tiles = math.ceil(m / tm) * math.ceil(n / tn)
        return m * n / (math.ceil(tiles / self.sms) * self.sms * tm * tn)


def _layer_time(
    layer: Layer,
    phases: tuple[str, ...],
    r: Rates,
    split: int = 1,
    fraction: float = 1.0,
    recompute: bool = False,
    head_dim: int = 0,
) -> tuple[float, dict[str, float]]:
    """Seconds for a layer's ops in ``phases`` and the same per op class (docs/perfmodel.md, "CPU and
    GPU"): work scaled by ``fraction`` and divided by ``split`` for tensor-parallel classes."""
    total, per_class, kernels, half_flops = 0.0, {}, r.kernels, r.half_flops
    # the optimizer steps each parameter tensor on its own (weight and bias: ~2 per owning op)
    opt_launches = 2 * sum(1 for o in layer.ops if o.phase == "fwd" and o.params) if "opt" in phases else 1
    for op in layer.ops:
        if op.phase not in phases:
            continue
        divide = split if op.op_class in SPLIT_CLASSES else 1
        scale = (fraction if op.phase != "opt" else 1.0) / divide
        compute_eff, flops, peak = 1.0, op.flops, r.peak
        if op.op_class in ("matmul", "attention"):
            rate = kernels.attention_eff if op.op_class == "attention" and kernels.attention_eff else r.ce
            if r.fp8_peak and op.op_class == "matmul" and layer.kind == "block":
                peak = r.fp8_peak
            work = op.flops * scale
            compute_eff = rate * (work / (work + half_flops) if work > 0 and half_flops > 0 else 1.0)
            if op.dims and r.sms:  # forward Y = XW (M x N); backward dX (M x K) and dW (K x N), half each
                row = op.name.endswith(ROW_PARALLEL)  # Megatron splits these layers' K, the others' N
                m, n, k_ = (
                    op.dims[0] * fraction,
                    op.dims[1] / (1 if row else divide),
                    op.dims[2] / (divide if row else 1),
                )
                pairs = ((m, n),) if op.phase == "fwd" else ((m, k_), (k_, n))
                compute_eff *= len(pairs) / sum(1 / r.quantized(a, b) for a, b in pairs)
        elif kernels.gelu_flops and op.name in GELU_OPS:
            # one tanh per element, forward and backward (the op graph counts 8 and 16 FLOPs per element)
            flops = op.flops / (GELU_FLOPS_PER_ELEMENT * (1 if op.phase == "fwd" else 2)) * kernels.gelu_flops
        if kernels.vector_flops and op.op_class not in ("matmul", "attention"):
            peak = kernels.vector_flops
        nbytes = op.bytes
        if head_dim and op.op_class == "attention" and op.phase in SCORE_PASSES:
            elements = op.flops / ((4 if op.phase == "fwd" else 8) * head_dim)
            per_e, per_mask = SCORE_PASSES[op.phase]
            nbytes += elements * (per_e * r.e + per_mask)
        launches = opt_launches if op.phase == "opt" else 1
        t = max(flops * scale / (peak * compute_eff), nbytes * scale / (r.bw * r.me)) + launches * r.launch
        if recompute and op.phase == "fwd":
            t *= 2
        total += t
        per_class[op.op_class] = per_class.get(op.op_class, 0.0) + t
    return total, per_class


def predict(rc: RunConfig, graph: OpGraph, ceilings: Ceilings):
    """Predicted Profile of one optimizer step on a CPU or GPU (module docstring)."""
    arch = rc.hardware.arch
    on_host = platform(arch).host_cpu  # else a GPU
    k = knobs_for(rc.hardware)
    ce, me, launch = k.compute_efficiency, k.memory_efficiency, k.launch_s
    half_flops = getattr(k, "matmul_half_flops", 0.0)
    kernels = kernels_for(k)
    if not is_calibrated(ceilings):
        raise UnsupportedError(f"cannot predict on the CPU without its ceilings: {ceilings.source}")
    peak, bw = ceilings.peak_flops, ceilings.bandwidth_Bps
    tags = {"ceilings": ceilings.source}
    fp8_peak = 0.0
    if rc.precision.name == FP8:  # the blocks' GEMMs at the FP8 peak, everything else at bf16's
        fp8_peak, peak = peak, rc.hardware.peak_flops["bf16"]
        tags["fp8"] = "block GEMMs at peak_flops.fp8 and the bf16 GEMM efficiency (fp8 points check it; none fits it)"
    if on_host:
        native = cpu_native_precision(rc.precision.compute_dtype)
        tags["precision_native"] = "true" if native else "false"
        if not native:  # emulated: its own efficiency factors (1.0 shipped; fitted from runs, docs/fitting.md)
            ce, me = ce * k.emulated_compute_efficiency, me * k.emulated_memory_efficiency
            if kernels.attention_eff:
                kernels = dataclasses.replace(
                    kernels, attention_eff=kernels.attention_eff * k.emulated_compute_efficiency
                )
            log.warning(
                "this CPU has no native %s arithmetic: predicting at its fastest emulated GEMM rate; "
                "torch's other emulated kernels are slower, so the prediction is optimistic",
                rc.precision.compute_dtype,
            )
    else:
        tags["tf32"] = "true" if tf32_enabled(rc.hardware, rc.precision) else "false"
        generation = getattr(k, "generation", None)  # a GPU's; other accelerators price at their own knobs
        if generation == "ampere":
            ce, me = k.ampere_compute_efficiency, k.ampere_memory_efficiency
        elif generation not in (None, "hopper"):
            ce = UNFITTED_EFFICIENCY
            tags["efficiency"] = f"unfitted: no calibration point of generation {generation}"
    par, m = rc.parallel, rc.run.grad_accum
    strategy = par.strategy
    layout = _layout(rc, k)
    if layout.recompute:
        tags["recompute"] = "full"
    split = par.degree if strategy == "tp" else (layout.stage_tensor if strategy == "fsdp" else 1)
    e = graph.precision.compute_bytes
    memory = memory_per_chip(rc, graph, layout, float(getattr(k, "allocator_margin", 0.0)))
    level = ceilings.memory_level
    capacity = rc.hardware.memory_level(level).capacity_bytes or (meminfo_bytes("MemTotal") if on_host else None)
    ranks = rc.parallel.n_chips if on_host and rc.parallel.strategy != "none" else 1  # a CPU's ranks share its RAM
    if capacity and memory.total * ranks > capacity:
        where = f"{level} (this machine's, {ranks} rank(s))" if on_host else f"{level} (per GPU)"
        raise CapacityError(where, memory.total * ranks, capacity, memory.describe())
    groups = list(layer_groups(graph))
    train = ("fwd", "bwd")
    tile = (int(getattr(k, "gemm_tile_m", 0)), int(getattr(k, "gemm_tile_n", 0)))
    sms = rc.hardware.units("sms") if tile[0] and rc.hardware.compute_units else 0
    rates = Rates(peak, bw, ce, me, launch, half_flops, e, kernels, sms or 0, tile, fp8_peak)

    def one_chip_step(split_: int, shards: int = 1) -> tuple[float, dict[str, float], list[Subtask]]:
        step, classes, subtasks = 0.0, {}, []
        for layer, count in groups:
            again = layout.recompute and layer.kind == "block"
            t_train, c_train = _layer_time(layer, train, rates, split_, recompute=again, head_dim=layout.score_head_dim)
            t_opt, c_opt = _layer_time(layer, ("opt",), rates, split_)
            t_opt /= shards  # per-class times keep the whole update's: the op graph counts its FLOPs in full
            per_layer = m * t_train + t_opt
            step += count * per_layer
            for cls, value in list(c_train.items()) + list(c_opt.items()):
                weight = m if cls != "optimizer" else 1
                classes[cls] = classes.get(cls, 0.0) + count * weight * value
            names = [layer.name] if count == 1 else [f"block.{i}" for i in range(count)]
            subtasks += [Subtask(name, time_s=per_layer) for name in names]
        return step, classes, subtasks

    comm: list[CommEvent] = []
    links, per_node = rc.hardware.links, rc.hardware.chips_per_node
    chips = par.n_chips * layout.stage_tensor
    link = group_link(links, per_node, chips)  # a group spanning nodes is paced by the inter-node link
    activation = graph.batch_size * rc.model.seq_len * rc.model.hidden_size * e
    if strategy == "pp":
        step, classes, subtasks = _pipeline(rc, graph, rates, comm, layout)
        kind = "stage"
    else:
        # each fsdp chip steps its 1/degree of the weights
        step, classes, subtasks = one_chip_step(split, par.degree if strategy == "fsdp" else 1)
        kind = "layer"
        if strategy in ("tp", "fsdp") and split > 1:
            # Megatron: 2 all-reduces forward and 2 backward per block (2 more with recomputation),
            # inside the tensor-parallel group (one node's NVLink while it fits in a node)
            calls = layout.tp_allreduces_per_layer * rc.model.n_layers * m
            tp = calls * ring_allreduce_s(activation, split, group_link(links, per_node, split))
            comm.append(CommEvent("tp", "allreduce", activation, tp, split, count=calls))
            step += tp
    if strategy == "fsdp" and par.degree > 1:
        times = _unit_times(graph, layout, rates, split)
        step += _fsdp_comm(rc, graph, comm, group_link(links, per_node, chips), split, times)
    elif rc.data_copies > 1:
        grads = graph.params * graph.precision.param_bytes / split / layout.stage_tensor
        if strategy == "pp":
            grads /= par.degree
        dp = ring_allreduce_s(grads, rc.data_copies, link)
        comm.append(CommEvent("dp", "allreduce", grads, dp, rc.data_copies))
        step += dp
    single = graph.batch_size * m / one_chip_step(1)[0] if chips > 1 else None
    cores = rc.hardware.compute_units[0] if rc.hardware.compute_units else None
    units = {cores.kind: UnitUse(float(cores.count), float(cores.count))} if cores is not None and cores.count else {}
    extra = {
        "perfmodel.compute_efficiency_term": ce,
        "perfmodel.memory_efficiency_term": me,
        **{f"memory.part_bytes.{level}.{part}": value for part, value in memory.parts().items()},
    }
    profile = make_profile(
        rc,
        f"perfmodel.{arch}",
        step,
        subtask_kind=kind,
        units=units,
        subtasks=subtasks,
        memory={level: memory.total},
        comm=comm,
        class_times=classes,
        single_chip_samples_per_s=single,
        extra=extra,
        tags=tags,
    )
    # tensor-parallel GPUs inside each pipeline stage
    return profile if chips == profile.chips else dataclasses.replace(profile, chips=chips)


@dataclass(frozen=True)
class _Layout:
    """What the GPU knobs add to ``parallel`` (all off on the CPU)."""

    recompute: bool = False
    stage_tensor: int = 1
    chunks: int = 1
    score_head_dim: int = 0  #: hidden / heads under ``attention: materialized``, else 0

    @property
    def tp_allreduces_per_layer(self) -> int:
        return 6 if self.recompute else 4


def _layout(rc: RunConfig, k) -> _Layout:
    recompute = getattr(k, "recompute", "none") == "full"
    stage_tensor = int(getattr(k, "stage_tensor_degree", 1))
    chunks = int(getattr(k, "pipeline_chunks", 1))
    if (rc.parallel.strategy not in ("pp", "fsdp") and stage_tensor > 1) or (
        rc.parallel.strategy != "pp" and chunks > 1
    ):
        raise UnsupportedError(
            "hardware.options.stage_tensor_degree applies to parallel=pp and fsdp only, pipeline_chunks to pp "
            f"(parallel={rc.parallel.strategy}: use parallel=tp parallel.degree for tensor parallelism)"
        )
    if stage_tensor > 1 and rc.model.kv_heads % stage_tensor:  # whole K/V heads per GPU (kv_heads divides n_heads)
        raise UnsupportedError(
            f"hardware.options.stage_tensor_degree={stage_tensor} does not divide the model's K/V heads "
            f"(model.n_kv_heads, else n_heads)={rc.model.kv_heads}"
        )
    head_dim = rc.model.hidden_size // rc.model.n_heads if getattr(k, "attention", "flash") == "materialized" else 0
    return _Layout(recompute, stage_tensor, chunks, head_dim)


def _unit_times(graph: OpGraph, layout: _Layout, rates: Rates, split: int) -> list[tuple[int, float, float]]:
    """(params, forward s, backward s) of each layer in forward order, per micro-batch on one chip."""
    times: dict[str, tuple[float, float]] = {}  # by layer kind: the decoder blocks are identical
    out = []
    for layer in graph.layers:
        key = "block" if layer.kind == "block" else layer.name
        if key not in times:
            head_dim = layout.score_head_dim if layer.kind == "block" else 0
            fwd, _ = _layer_time(layer, ("fwd",), rates, split, head_dim=head_dim)
            bwd, _ = _layer_time(layer, ("bwd",), rates, split, head_dim=head_dim)
            if layout.recompute and layer.kind == "block":  # the recomputed forward runs before the backward
                bwd += fwd
            times[key] = fwd, bwd
        out.append((layer.params, *times[key]))
    return out


def _fsdp_comm(rc: RunConfig, graph: OpGraph, comm: list[CommEvent], link, split: int, units) -> float:
    """Exposed seconds of sharded data parallel per step, its events appended to ``comm``
    (docs/perfmodel.md, "Sharded data parallel")."""
    par, m, w = rc.parallel, rc.run.grad_accum, graph.precision.param_bytes
    n = par.degree
    gathered = graph.precision.compute_bytes if graph.precision.autocast else w
    sizes = [params * w / split for params, _, _ in units]
    ag = [allgather_s(s * gathered / w, n, link) for s in sizes]
    rs = [reduce_scatter_s(s, n, link) for s in sizes]
    fwd = [f for _, f, _ in units]
    bwd = [b for _, _, b in units]
    last = len(units) - 1

    def exposed(comm_s: list[float], compute_s: list[float], order: range) -> float:
        steps = list(order)
        total = comm_s[steps[0]]
        for prev, cur in zip(steps, steps[1:], strict=False):
            total += max(0.0, comm_s[cur] - compute_s[prev])
        return total

    backward = range(last, -1, -1)
    if par.sharding == "optimizer":
        rs_s = exposed(rs, bwd, backward)
        ag_s = sum(ag)
        comm.append(CommEvent("fsdp", "reduce_scatter", sum(sizes), rs_s, n, count=len(units)))
        comm.append(CommEvent("fsdp", "allgather", sum(sizes), ag_s, n, count=len(units)))
        return rs_s + ag_s
    full = par.sharding == "full"
    ag_fwd = exposed(ag, fwd, range(last + 1))
    back = exposed([r + (a if full else 0.0) for a, r in zip(ag, rs, strict=True)], bwd, backward)
    gathers = (2 if full else 1) * len(units)
    comm.append(CommEvent("fsdp", "allgather", sum(sizes), m * ag_fwd, n, count=m * gathers))
    comm.append(CommEvent("fsdp", "reduce_scatter", sum(sizes), m * back, n, count=m * len(units)))
    return m * (ag_fwd + back)


def _pipeline(rc: RunConfig, graph: OpGraph, rates: Rates, comm: list[CommEvent], layout: _Layout):
    """Stage times per micro-batch, then the pipeline over ``parallel.micro_batches``, with Megatron's
    tensor parallelism per stage and interleaved 1F1B (docs/perfmodel.md, "CPU and GPU")."""
    par, m = rc.parallel, rc.run.grad_accum
    mb = par.micro_batches
    fraction = 1.0 / mb
    layers = par.layers_per_stage or (rc.model.n_layers,)
    p = len(layers)
    t, v = layout.stage_tensor, layout.chunks
    links, per_node = rc.hardware.links, rc.hardware.chips_per_node
    block = graph.layer("block.0") if rc.model.n_layers else None
    e = graph.precision.compute_bytes
    train = ("fwd", "bwd")
    recompute, head_dim = layout.recompute, layout.score_head_dim
    t_block, c_block = _layer_time(block, train, rates, t, fraction, recompute, head_dim) if block else (0.0, {})
    o_block = _layer_time(block, ("opt",), rates, t)[0] if block else 0.0
    # the embedding's and the head's seconds per micro-batch (train) and per step (opt)
    ends = {name: _layer_time(graph.layer(name), train, rates, t, fraction)[0] for name in ("embedding", "head")}
    ends_opt = {name: _layer_time(graph.layer(name), ("opt",), rates, t)[0] for name in ("embedding", "head")}
    message = graph.batch_size * fraction * rc.model.seq_len * rc.model.hidden_size * e
    hop_link = group_link(links, per_node, p * t)  # neighbouring stages on other nodes once the pipeline spans nodes
    hop = p2p_s(message / t, hop_link) if hop_link is not None else 0.0
    if t > 1:
        intra = group_link(links, per_node, t)
        hop += allgather_s(message, t, intra)
        t_block += layout.tp_allreduces_per_layer * ring_allreduce_s(message, t, intra)
    head_stage = p - 1 if par.head_on_last else 0
    stage, opt = [], []
    for i, n in enumerate(layers):
        work = n * t_block + (ends["embedding"] if i == 0 else 0.0) + (ends["head"] if i == head_stage else 0.0)
        # activation forward and gradient back at each of the stage's chunk boundaries
        sends = (1 if i < p - 1 else 0) + (1 if i > 0 else 0) + (2 * (v - 1) if p > 1 else 0)
        stage.append(work + sends * hop)
        opt.append(
            n * o_block + (ends_opt["embedding"] if i == 0 else 0.0) + (ends_opt["head"] if i == head_stage else 0.0)
        )
    timing = pipeline_time(stage, mb)
    if v > 1:
        slowest = max(stage)
        bubble = (sum(stage) - slowest) / v
        timing = PipelineTiming(mb * slowest + bubble, bubble, timing.bottleneck)
    step = m * timing.step_s + max(opt)
    comm.append(CommEvent("pp", "p2p", message / t, m * mb * 2 * hop * v, 2, count=2 * mb * m * v))
    comm.append(CommEvent("pp", "bubble", 0.0, m * timing.bubble_s, p))
    subtasks = [Subtask(f"stage{i}", time_s=m * mb * st) for i, st in enumerate(stage)]
    classes = {cls: m * mb * sum(layers) * value for cls, value in c_block.items()}
    return step, classes, subtasks
