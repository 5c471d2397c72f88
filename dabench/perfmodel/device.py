"""CPU and GPU: roofline models of the targets dabench also measures (for ``hardware.mode=validate``).

Eager PyTorch runs the op graph one op after another, so the step is a sum over ops:

    t_op = max(F / (P * e_c), Q / (B * e_m)) + launch

with P the peak FLOP/s at the run's precision and B the main memory bandwidth from
:func:`dabench.host.ceilings.resolve_ceilings` (calibrated on CPU: a large matmul and a large copy, so
the efficiency terms default to 1.0 there; the GPU's are datasheet peaks, so they default to the
share that large cuBLAS GEMMs and streaming kernels typically reach, an assumption), and
``launch`` a fixed per-op cost (framework dispatch and autograd on CPU, kernel launches on GPU;
assumptions, overridable), paid once per op and phase, and by the optimizer once per parameter
tensor (two per op that owns weights). Only matmul and attention ops use the compute efficiency; the others
are bandwidth-bound in practice and use the same formula.

Parallel runs (the distributed backends' layouts):

- dp: the same per-chip work, plus a ring all-reduce of the gradients (not overlapped);
- tp: matmul, attention, embedding and loss work split over t chips, norms and element-wise ops
  replicated; two activation all-reduces per block forward and two backward;
- pp: stages from ``layers_per_stage`` (embedding on stage 0, head on the last unless
  ``head_on_last`` is false), ``parallel.micro_batches`` micro-batches of the batch per call, a
  point-to-point activation (forward) and gradient (backward) per boundary and micro-batch, the
  pipeline's bubble from :mod:`dabench.perfmodel.pipeline`; ``run.grad_accum`` calls per step.

Small matmuls run below the large-matmul rate (packing, thread start-up, short inner loops):
a matmul op of F FLOPs runs at ``P * e_c * F / (F + F_half)`` (CPU; ``F_half`` = 0 on the GPU,
whose efficiency term already is a typical GEMM's).

Knobs (typed, :mod:`dabench.perfmodel.knobs.cpu` / ``.cuda``, values in conf/hardware/<arch>.yaml
``options``): ``compute_efficiency``, ``memory_efficiency``, ``launch_s``; CPU
``matmul_half_flops``; CUDA ``tf32``.

Math modes priced exactly as measure mode runs them:

- CUDA fp32 with ``tf32: true``: matmul and attention ops at ``peak_flops.tf32`` (the backend sets
  ``torch.backends.cuda.matmul.allow_tf32`` from the same knob; see
  :func:`dabench.host.ceilings.resolve_ceilings`); ``false`` (torch's default) at the fp32 CUDA-core peak.
- CPU: the calibrated peak at the run's compute dtype; a dtype without native arithmetic
  (:func:`dabench.host.ceilings.cpu_native_precision`, e.g. bf16 without AVX512-BF16/AMX) is
  calibrated, so priced, at its emulated rate (the faster of torch's GEMM paths, the roof), and the
  profile is tagged ``precision_native=false``. Such predictions are optimistic: torch's other
  16-bit CPU kernels are slower still (on an AVX2-only EPYC in fp16: the backward matmuls through
  ``torch.mm`` at ~1 of ~20 GFLOP/s, attention and element-wise ops ~3x their predicted time;
  the tiny stack measured 4-5x slower than predicted), and the run warns.
- A CPU whose calibration was refused (machine busy) and has none cached cannot be predicted:
  ``unsupported`` with the calibration's reason.
"""

from __future__ import annotations

import logging

from dabench.core.ceilings import Ceilings
from dabench.config.sections import RunConfig
from dabench.host.ceilings import cpu_native_precision, is_calibrated, tf32_enabled
from dabench.perfmodel.comm import group_link, p2p_s, ring_allreduce_s
from dabench.perfmodel.assemble import layer_groups, make_profile
from dabench.perfmodel.knobs import knobs_for
from dabench.perfmodel.pipeline import pipeline_time
from dabench.core.status import UnsupportedError
from dabench.core.profile import CommEvent, Subtask, UnitUse
from dabench.workload.opgraph import Layer, OpGraph

log = logging.getLogger(__name__)

SPLIT_CLASSES = ("matmul", "attention", "embedding", "loss")


def _layer_time(layer: Layer, phases: tuple[str, ...], peak: float, bw: float, ce: float, me: float,
                launch: float, split: int = 1, fraction: float = 1.0,
                half_flops: float = 0.0) -> tuple[float, dict[str, float]]:
    """Seconds for a layer's ops in ``phases`` (work scaled by ``fraction`` of the micro-batch,
    and divided by ``split`` for tensor-parallel op classes), and the same per op class.
    ``half_flops``: a matmul/attention op of F FLOPs runs at F / (F + half_flops) of its rate."""
    total, per_class = 0.0, {}
    for op in layer.ops:
        if op.phase not in phases:
            continue
        divide = split if op.op_class in SPLIT_CLASSES else 1
        scale = (fraction if op.phase != "opt" else 1.0) / divide
        compute_eff = 1.0
        if op.op_class in ("matmul", "attention"):
            flops = op.flops * scale
            compute_eff = ce * (flops / (flops + half_flops) if flops > 0 and half_flops > 0 else 1.0)
        # the optimizer steps each parameter tensor on its own (weight and bias: ~2 per owning op)
        launches = 2 * sum(1 for o in layer.ops if o.phase == "fwd" and o.params) if op.phase == "opt" else 1
        t = max(op.flops * scale / (peak * compute_eff), op.bytes * scale / (bw * me)) + launches * launch
        total += t
        per_class[op.op_class] = per_class.get(op.op_class, 0.0) + t
    return total, per_class


def predict(rc: RunConfig, graph: OpGraph, ceilings: Ceilings):
    """Predicted Profile of one optimizer step on a CPU or GPU (per chip, with its parallel layout),
    priced at ``ceilings`` (the resolved ones, or validate mode's in-situ probes)."""
    arch = rc.hardware.arch
    k = knobs_for(rc.hardware)
    ce, me, launch = k.compute_efficiency, k.memory_efficiency, k.launch_s
    half_flops = getattr(k, "matmul_half_flops", 0.0)
    if not is_calibrated(ceilings):
        raise UnsupportedError(f"cannot predict on the CPU without its ceilings: {ceilings.source}")
    peak, bw = ceilings.peak_flops, ceilings.bandwidth_Bps
    tags = {"ceilings": ceilings.source}
    if arch == "cpu":
        native = cpu_native_precision(rc.precision.compute_dtype)
        tags["precision_native"] = "true" if native else "false"
        if not native:
            log.warning("this CPU has no native %s arithmetic: predicting at its fastest emulated GEMM rate; "
                        "torch's other emulated kernels are slower, so the prediction is optimistic",
                        rc.precision.compute_dtype)
    elif arch == "cuda":
        tags["tf32"] = "true" if tf32_enabled(rc.hardware, rc.precision) else "false"
    par, m = rc.parallel, rc.run.grad_accum
    strategy = par.strategy
    split = par.degree if strategy == "tp" else 1
    groups = list(layer_groups(graph))
    train = ("fwd", "bwd")

    def one_chip_step(split_: int) -> tuple[float, dict[str, float], list[Subtask]]:
        step, classes, subtasks = 0.0, {}, []
        for layer, count in groups:
            t_train, c_train = _layer_time(layer, train, peak, bw, ce, me, launch, split_, half_flops=half_flops)
            t_opt, c_opt = _layer_time(layer, ("opt",), peak, bw, ce, me, launch, split_, half_flops=half_flops)
            per_layer = m * t_train + t_opt
            step += count * per_layer
            for cls, value in list(c_train.items()) + list(c_opt.items()):
                weight = m if cls != "optimizer" else 1
                classes[cls] = classes.get(cls, 0.0) + count * weight * value
            names = [layer.name] if count == 1 else [f"block.{i}" for i in range(count)]
            subtasks += [Subtask(name, time_s=per_layer) for name in names]
        return step, classes, subtasks

    comm: list[CommEvent] = []
    link = group_link(rc.hardware.links, rc.hardware.chips_per_node, par.n_chips)
    e = graph.precision.compute_bytes
    activation = graph.batch_size * rc.model.seq_len * rc.model.hidden_size * e
    extra: dict[str, float] = {}
    if strategy == "pp":
        step, classes, subtasks = _pipeline(rc, graph, peak, bw, ce, me, launch, link, comm, half_flops)
        kind = "stage"
    else:
        step, classes, subtasks = one_chip_step(split)
        kind = "layer"
        if strategy == "tp" and split > 1:
            calls = 4 * rc.model.n_layers * m
            tp = calls * ring_allreduce_s(activation, split, link)
            comm.append(CommEvent("tp", "allreduce", activation, tp, split, count=calls))
            step += tp
    if rc.data_copies > 1:
        grads = graph.params * graph.precision.param_bytes / split
        if strategy == "pp":
            grads /= par.degree
        dp = ring_allreduce_s(grads, rc.data_copies, link)
        comm.append(CommEvent("dp", "allreduce", grads, dp, rc.data_copies))
        step += dp
    single = None
    if par.n_chips > 1:
        one, _, _ = one_chip_step(1)
        single = graph.batch_size * m / one
    units = {}
    cores = rc.hardware.compute_units[0] if rc.hardware.compute_units else None
    if cores is not None and cores.count:
        units = {cores.kind: UnitUse(float(cores.count), float(cores.count))}
    extra["perfmodel.compute_efficiency_term"] = ce
    extra["perfmodel.memory_efficiency_term"] = me
    return make_profile(rc, f"perfmodel.{arch}", step, subtask_kind=kind, units=units, subtasks=subtasks,
                        memory={ceilings.memory_level: _memory(graph, rc)}, comm=comm, class_times=classes,
                        single_chip_samples_per_s=single, extra=extra,
                        tags=tags)



def _memory(graph: OpGraph, rc: RunConfig) -> float:
    """Weights, gradients, AdamW moments (plus a 16-bit copy under autocast) and one micro-batch's
    saved activations, per chip (divided over tp/pp chips)."""
    state = graph.params * graph.precision.param_bytes * 4
    if graph.precision.autocast:
        state += graph.params * graph.precision.compute_bytes
    shards = rc.parallel.degree if rc.parallel.strategy in ("tp", "pp") else 1
    return (state + graph.saved_bytes) / shards


def _pipeline(rc: RunConfig, graph: OpGraph, peak, bw, ce, me, launch, link, comm, half_flops=0.0):
    """Stage times per micro-batch, then the pipeline over ``parallel.micro_batches``."""
    par, m = rc.parallel, rc.run.grad_accum
    mb = par.micro_batches
    fraction = 1.0 / mb
    layers = par.layers_per_stage or (rc.model.n_layers,)
    p = len(layers)
    block = graph.layer("block.0") if rc.model.n_layers else None
    t_block, c_block = _layer_time(block, ("fwd", "bwd"), peak, bw, ce, me, launch, 1, fraction, half_flops) if block else (0.0, {})
    o_block, _ = _layer_time(block, ("opt",), peak, bw, ce, me, launch, half_flops=half_flops) if block else (0.0, {})
    t_emb, _ = _layer_time(graph.layer("embedding"), ("fwd", "bwd"), peak, bw, ce, me, launch, 1, fraction, half_flops)
    t_head, _ = _layer_time(graph.layer("head"), ("fwd", "bwd"), peak, bw, ce, me, launch, 1, fraction, half_flops)
    o_emb, _ = _layer_time(graph.layer("embedding"), ("opt",), peak, bw, ce, me, launch, half_flops=half_flops)
    o_head, _ = _layer_time(graph.layer("head"), ("opt",), peak, bw, ce, me, launch, half_flops=half_flops)
    e = graph.precision.compute_bytes
    message = graph.batch_size * fraction * rc.model.seq_len * rc.model.hidden_size * e
    hop = p2p_s(message, link) if link is not None else 0.0
    head_stage = p - 1 if par.head_on_last else 0
    stage, opt = [], []
    for i, n in enumerate(layers):
        t = n * t_block + (t_emb if i == 0 else 0.0) + (t_head if i == head_stage else 0.0)
        sends = (1 if i < p - 1 else 0) + (1 if i > 0 else 0)  # activation forward, gradient back
        stage.append(t + sends * hop)
        opt.append(n * o_block + (o_emb if i == 0 else 0.0) + (o_head if i == head_stage else 0.0))
    timing = pipeline_time(stage, mb)
    step = m * timing.step_s + max(opt)
    comm.append(CommEvent("pp", "p2p", message, m * mb * 2 * hop, 2, count=2 * mb * m))
    comm.append(CommEvent("pp", "bubble", 0.0, m * timing.bubble_s, p))
    subtasks = [Subtask(f"stage{i}", time_s=m * mb * t) for i, t in enumerate(stage)]
    classes = {cls: m * mb * sum(layers) * v for cls, v in c_block.items()}
    return step, classes, subtasks
