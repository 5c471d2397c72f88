"""Graphcore Bow IPU: pipeline stages over IPUs, bulk-synchronous tiles, In-Processor-Memory.

``predict(rc, graph, ceilings)`` -> ``Profile(mode="predict")`` of one optimizer step, one subtask
per pipeline stage (IPU); ``ceilings`` are unused (the model reads its spec). Replicas all-reduce their
gradients over IPU-Links inside a Pod rack and over GW-Links between racks; each host call costs
``host_call_overhead_s`` over ``device_iterations`` steps. CapacityError when an
IPU's memory cannot hold its stage; CompileError when ``run.grad_accum`` < 2p - 1 over p IPUs.
Knobs: platforms/ipu/knobs.py.

Derivation: docs/perfmodel.md, "Bow IPU (Graphcore)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from dabench.config.sections import RunConfig
from dabench.core.ceilings import Ceilings
from dabench.core.profile import CommEvent, Subtask, UnitUse
from dabench.core.status import CompileError, UnsupportedError
from dabench.perfmodel.assemble import make_profile, op_width, peak_flops, require_strategy
from dabench.perfmodel.capacity import MemoryUse, require_fits, training_state
from dabench.perfmodel.comm import group_link, p2p_s, ring_allreduce_s
from dabench.perfmodel.knobs import knobs_for
from dabench.perfmodel.pipeline import pipeline_time, stash_depth
from dabench.platforms.ipu.knobs import IpuOptions
from dabench.workload.opgraph import ADAMW_FLOPS_PER_PARAM, Layer, Op, OpGraph

SOURCE = "perfmodel.ipu"
AMP_CLASSES = ("matmul", "attention")


@dataclass(frozen=True)
class IpuKnobs:
    options: IpuOptions  #: the resolved hardware.options
    tiles: int
    peak: float  #: AMP FLOP/s per IPU at the run's precision and partials type (fp32: the FP32 peak)
    partial_bytes: float  #: bytes of one matmul partial: 2 with fp16 partials, else 4
    sram_bytes: float
    streaming_Bps: float

    @property
    def grain(self) -> float:
        """Output elements one tile's AMP unit produces per cycle (MACs per cycle per tile)."""
        return max(1.0, self.peak / (self.tiles * self.options.clock_hz * 2.0))


def knobs(rc: RunConfig) -> IpuKnobs:
    hw = rc.hardware
    if rc.precision.name not in hw.precisions:
        raise UnsupportedError(
            f"hardware=ipu has no {rc.precision.name} arithmetic (supports {', '.join(hw.precisions)})"
        )
    o: IpuOptions = knobs_for(hw)
    streaming = next((level for level in hw.memory if level.name == "streaming"), None)
    half = rc.precision.compute_dtype in ("fp16", "bf16")  # the AMP at FP16.16; fp32 partials: FP16.32, half it
    return IpuKnobs(
        options=o,
        tiles=int(hw.units("tiles") or 1472),
        peak=peak_flops(rc) / 2.0 if half and not o.half_partials else peak_flops(rc),
        partial_bytes=2.0 if half and o.half_partials else 4.0,
        sram_bytes=hw.capacity("sram"),
        streaming_Bps=float(streaming.bandwidth_Bps) if streaming and streaming.bandwidth_Bps else 2.0e10,
    )


#: BSP supersteps (compute sets, each closed by a tile sync) per op class in one pass: a matmul is
#: poplin's AMP compute set and its partials reduction; attention on PopTorch materialises its
#: scores (QK^T, scale and mask, softmax as max / exp-sum / normalise, PV); a norm reduces twice and
#: normalises; an element-wise op, a gather or the loss is one. Backward passes run each twice
#: (gradient of the input and of the weights).
SUPERSTEPS = {"matmul": 2, "attention": 7, "norm": 3, "elementwise": 1, "embedding": 1, "loss": 3}
#: load/store passes over the attention scores per pass (forward: write scores, read them for the
#: softmax, write the probabilities, read them for PV; backward: half as many again)
SCORE_PASSES = {"fwd": 4, "bwd": 6}


@dataclass(frozen=True)
class OpCost:
    """One op's time on one IPU per micro-batch, by mechanism (docs/perfmodel.md, "Bow IPU")."""

    amp_s: float  #: AMP arithmetic (matmul, attention) at the run's partials rate
    vector_s: float  #: vector work: lanes or the tile's load/store width, whichever binds
    exchange_s: float  #: operands (and the embedding's rows) moved over the on-chip exchange
    copy_s: float  #: rearrangement copies of the backward pass's operands into the planner's layout
    sync_s: float  #: BSP supersteps: tile sync and exchange start-up, one per compute set
    tiles: int
    temp_bytes: float = 0.0  #: the largest of its matmul plans' temporaries, over all the tiles it uses

    @property
    def time_s(self) -> float:
        return self.amp_s + self.vector_s + self.exchange_s + self.copy_s + self.sync_s


def op_tiles(op: Op, graph: OpGraph, k: IpuKnobs) -> int:
    """Tiles an op can spread over: ceil(output elements / grain), at most the IPU's tiles."""
    width = op_width(op, graph.model)
    if op.phase == "opt":  # element-wise over the layer's parameters
        elements = op.flops / ADAMW_FLOPS_PER_PARAM
    else:
        elements = graph.batch_size * graph.model.seq_len * width
    return max(1, min(k.tiles, math.ceil(elements / k.grain)))


def score_bytes(op: Op, graph: OpGraph) -> float:
    """Bytes the vector units move over the materialised attention scores (heads x seq^2 per sample)."""
    m = graph.model
    elements = graph.batch_size * m.n_heads * m.seq_len * m.seq_len
    return SCORE_PASSES.get(op.phase, 0) * elements * graph.precision.compute_bytes


#: the AMP vertex works on input and output channels in groups of this many: a tile's share of a
#: product's contraction and columns rounds up to it (poplibs ConvModel.cpp counts a tile's channel
#: groups as ceil(channels / channels per group); 16 half-precision inputs per AMP weight row)
AMP_CHANNEL_GROUP = 16


def _splits(size: int, limit: int) -> list[int]:
    """Candidate parallel splits of a dimension of ``size`` over at most ``limit`` tiles: powers of
    two, and the largest split that fits (``size`` itself, or ``limit``)."""
    out, s = {1, max(1, min(size, limit))}, 1
    while s < size and s <= limit:
        out.add(s)
        s *= 2
    return sorted(out)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@lru_cache(maxsize=4096)
def plan_matmul(
    groups: int,
    rows: int,
    inner: int,
    cols: int,
    tiles: int,
    macs: float,
    efficiency: float,
    xb: float,
    ls: float,
    budget: float,
    e: float,
    partial: float,
) -> tuple[tuple[int, int, int, int], float, float, float, float]:
    """The cheapest split of ``groups`` [rows, inner] x [inner, cols] products over ``tiles`` within
    the planner's temporaries ``budget`` per tile, else the one needing least memory
    (docs/perfmodel.md, "Bow IPU"): (splits of groups, rows, contraction and columns; AMP, exchange
    and reduction cycles; temporary bytes per tile). The column split fills the tiles the other
    splits leave (or takes the power of two below that); the arguments after the shape are
    :func:`planner_args`, then the bytes of an operand and of a partial."""
    grain = AMP_CHANNEL_GROUP
    best = fallback = None
    for pg in _splits(groups, tiles):
        g = _ceil(groups, pg)
        for pr in _splits(rows, tiles // pg):
            r = _ceil(rows, pr)
            for pc in _splits(_ceil(inner, grain), tiles // (pg * pr)):
                c = _ceil(_ceil(inner, pc), grain) * grain if inner >= grain else inner
                fill = max(1, min(tiles // (pg * pr * pc), _ceil(cols, grain)))
                for pq in {fill, 1 << (fill.bit_length() - 1)}:
                    q = _ceil(_ceil(cols, pq), grain) * grain if cols >= grain else cols
                    partials = g * r * q * partial
                    inputs = g * r * c * e * (1.0 - 1.0 / pq) / (2.0 if pq % 2 == 0 else 1.0)
                    weights = g * c * q * e * (1.0 - 1.0 / pr)
                    amp = g * r * c * q / (macs * efficiency)
                    exchange = (inputs + weights + partials) / xb
                    reduce = partials / ls if pc > 1 else 0.0
                    temp = (g * r * c * e if pq > 1 else 0.0) + (g * c * q * e if pr > 1 else 0.0) + partials
                    plan = ((pg, pr, pc, pq), amp, exchange, reduce, temp)
                    cycles = amp + exchange + reduce
                    if temp <= budget and (best is None or cycles < best[1] + best[2] + best[3]):
                        best = plan
                    if fallback is None or (temp, cycles) < (fallback[4], sum(fallback[1:4])):
                        fallback = plan
    return best or fallback


def planner_args(k: IpuKnobs) -> tuple[int, float, float, float, float, float]:
    """:func:`plan_matmul`'s per-tile arguments after the shape."""
    t = k.tiles
    budget = k.options.available_memory_proportion * k.sram_bytes / t
    macs = k.peak / (t * k.options.clock_hz * 2.0)
    o = k.options
    return t, macs, o.amp_efficiency, o.exchange_bandwidth_Bps / t / o.clock_hz, o.loadstore_bytes_per_cycle, budget


def matmul_shapes(op: Op, graph: OpGraph) -> list[tuple[int, int, int, int]]:
    """The (groups, rows, inner, cols) products an AMP op runs: a linear layer's forward X W, and
    backward dY W^T and X^T dY; attention's per-head Q K^T and P V forward and its four backward
    products (dP, dV, dQ, dK)."""
    m = graph.model
    if op.op_class == "attention":
        s, d = m.seq_len, m.hidden_size // m.n_heads
        heads = graph.batch_size * m.n_heads
        if op.phase == "fwd":
            return [(heads, s, d, s), (heads, s, s, d)]
        return [(heads, s, d, s), (heads, s, s, d), (heads, s, s, d), (heads, s, s, d)]
    head = op.name.startswith(("lm_head", "head."))
    tokens = graph.batch_size * ((m.head_tokens or m.seq_len) if head else m.seq_len)
    inner = m.ffn_hidden if op.name == "mlp.fc2" else m.hidden_size
    fwd = op.flops if op.phase == "fwd" else op.flops / 2.0
    cols = max(1, round(fwd / (2.0 * tokens * inner)))
    if op.phase == "fwd":
        return [(1, tokens, inner, cols)]
    return [(1, tokens, cols, inner), (1, inner, tokens, cols)]


def _amp_cost(op: Op, graph: OpGraph, k: IpuKnobs) -> tuple[float, float, float, int, float]:
    """(AMP, exchange, reduction seconds, tiles, temporaries over its tiles) summed over the products
    an AMP op runs (:func:`matmul_shapes`), each split as :func:`plan_matmul` splits it."""
    args = planner_args(k)
    amp = exchange = reduce = temp = 0.0
    tiles = 0
    for shape in matmul_shapes(op, graph):
        splits, a, x, r, tb = plan_matmul(*shape, *args, graph.precision.compute_bytes, k.partial_bytes)
        used = splits[0] * splits[1] * splits[2] * splits[3]
        amp, exchange, reduce = amp + a, exchange + x, reduce + r
        tiles, temp = max(tiles, used), max(temp, tb * used)
    return amp / k.options.clock_hz, exchange / k.options.clock_hz, reduce / k.options.clock_hz, tiles, temp


def op_cost(op: Op, graph: OpGraph, k: IpuKnobs) -> OpCost:
    steps = SUPERSTEPS.get(op.op_class, 1) * (2 if op.phase == "bwd" else 1)
    sync = steps * k.options.superstep_s if op.phase != "opt" else k.options.superstep_s
    if op.op_class in AMP_CLASSES:
        amp, exchange, vector, tiles, temp = _amp_cost(op, graph, k)
        if op.op_class == "attention":
            vector += score_bytes(op, graph) / (k.tiles * k.options.loadstore_bytes_per_cycle * k.options.clock_hz)
        copy = op.bytes / 2.0 / k.options.exchange_bandwidth_Bps if op.phase == "bwd" else 0.0
        return OpCost(amp, vector, exchange, copy, sync, tiles, temp)
    tiles = op_tiles(op, graph, k)
    store_Bps = tiles * k.options.loadstore_bytes_per_cycle * k.options.clock_hz
    lanes = op.flops / (tiles * k.options.vector_flops_per_cycle * k.options.clock_hz)
    vector = max(lanes, op.bytes / store_Bps)
    exchange = op.bytes / k.options.exchange_bandwidth_Bps if op.op_class == "embedding" else 0.0
    return OpCost(0.0, vector, exchange, 0.0, sync, tiles)


MECHANISMS = ("amp", "vector", "exchange", "copy", "sync")


@dataclass(frozen=True)
class LayerCost:
    """One layer on one IPU, per micro-batch (train = fwd + bwd [+ recompute]) and per step (opt)."""

    train_s: float
    parts: dict[str, float]  #: train_s by mechanism (:data:`MECHANISMS`)
    opt_s: float
    tiles: int
    largest_operands: float  #: bytes of the largest matmul plan's temporaries (operand copies, partials)


def layer_cost(layer: Layer, graph: OpGraph, k: IpuKnobs) -> LayerCost:
    opt = operands = 0.0
    parts = dict.fromkeys(MECHANISMS, 0.0)
    tiles = 0
    for op in layer.ops:
        cost = op_cost(op, graph, k)
        if op.phase == "opt":
            opt += cost.time_s
            continue
        repeat = 2 if (op.phase == "fwd" and k.options.recompute and layer.kind == "block") else 1
        tiles = max(tiles, cost.tiles)
        for name in MECHANISMS:
            parts[name] += repeat * getattr(cost, f"{name}_s")
        if op.op_class in AMP_CLASSES:
            # the vocabulary-sized LM head runs in embedding_serialization_factor serial pieces
            pieces = k.options.embedding_serialization_factor if layer.kind == "head" else 1
            operands = max(operands, cost.temp_bytes / pieces)
    return LayerCost(sum(parts.values()), parts, opt, tiles, operands)


def placement(rc: RunConfig) -> tuple[int, ...]:
    """Decoder layers per IPU of one replica (IPU 0 also holds the embedding and the head)."""
    require_strategy(
        rc,
        ("none", "dp", "pp"),
        "PopTorch's GPT-2 example pipelines layers over IPUs "
        "(parallel=pp) and replicates (parallel.replicas or parallel=dp); tensor sharding is not modelled",
    )
    if rc.parallel.strategy == "pp":
        return tuple(rc.parallel.layers_per_stage or ())
    return (rc.model.n_layers,)


def ipu_params(graph: OpGraph, layers: tuple[int, ...]) -> list[int]:
    """Parameters each IPU holds: its decoder blocks, plus the embedding and the head on IPU 0 (a
    tied head's table counted once)."""
    block = graph.layer("block.0").params if graph.model.n_layers else 0
    extra = graph.layer("embedding").params + graph.layer("head").params
    return [n * block + (extra if i == 0 else 0) for i, n in enumerate(layers)]


def memory_per_ipu(
    rc: RunConfig, graph: OpGraph, k: IpuKnobs, layers: tuple[int, ...], costs: dict[str, LayerCost]
) -> list[MemoryUse]:
    """Peak In-Processor-Memory use of each IPU (docs/perfmodel.md, "Bow IPU", memory per IPU)."""
    precision = graph.precision
    half = precision.param_dtype in ("fp16", "bf16")
    grad_bytes = 2.0 if half else None
    moments = (2.0, 4.0) if half else None  # Graphcore GPT-2 get_optimizer: fp16 m, fp32 v
    block = graph.layer("block.0") if rc.model.n_layers else None
    e = precision.compute_bytes
    tokens = graph.batch_size * rc.model.seq_len
    checkpoint = tokens * rc.model.hidden_size * e
    p, r = len(layers), rc.data_copies
    uses = []
    for i, (n_blocks, params) in enumerate(zip(layers, ipu_params(graph, layers), strict=False)):
        held = [("block", n_blocks)] if n_blocks else []
        if i == 0:
            held += [("embedding", 1), ("head", 1)]
        if not held:
            uses.append(MemoryUse())
            continue
        state = training_state(params, precision, compute_copy=True, grad_bytes=grad_bytes, moment_bytes=moments)
        if k.options.optimizer_state_offchip:
            state = MemoryUse(state.weights, state.gradients, 0.0)
        elif k.options.replicated_tensor_sharding and r > 1:  # each replica keeps 1/r of the moments
            state = MemoryUse(state.weights, state.gradients, state.optimizer / r)
        depth = stash_depth(i, p + 1, rc.run.grad_accum, "interleaved") if p > 1 else 1
        if k.options.recompute:
            stash = n_blocks * checkpoint * depth
            working = block.saved_bytes if (n_blocks and block) else 0.0
        else:
            stash = n_blocks * (block.saved_bytes if block else 0.0) * depth
            working = 0.0
        if i == 0:  # the serialised head computes (and consumes) its logits in that many vocabulary slices
            head = graph.layer("head").saved_bytes / k.options.embedding_serialization_factor
            working = max(working, head + graph.layer("embedding").saved_bytes)
        wanted = max(costs[name].largest_operands for name, _ in held)
        temporaries = min(k.options.available_memory_proportion * k.sram_bytes, wanted)
        program = k.options.program_memory_fraction * k.sram_bytes
        uses.append(state.plus(activations=stash + working, other=temporaries + program))
    return uses


def dp_allreduce_s(nbytes: float, replicas: int, stages: int, links, domain: int) -> float:
    """All-reduce of one IPU's ``nbytes`` of gradients over the ``replicas`` holding its stage, as
    GCL runs it across Pod racks (docs/perfmodel.md, "Bow IPU", scale-out): reduce-scatter and
    all-gather over IPU-Links among the replicas inside one IPU-Link domain, and between them an
    all-reduce of each IPU's 1/inner share over GW-Links among the racks."""
    inner = max(1, min(replicas, domain // max(1, stages)))
    outer = -(-replicas // inner)
    intra, inter = group_link(links, domain, 1), group_link(links, 1, 2)
    seconds = ring_allreduce_s(nbytes, inner, intra) if intra else 0.0
    return seconds + (ring_allreduce_s(nbytes / inner, outer, inter) if inter else 0.0)


def memory_share(shares: dict[str, float]) -> float:
    """Share of a stage's moving-data time out of that plus its AMP time (BSP sync excluded)."""
    moving = shares["vector"] + shares["exchange"] + shares["copy"] + shares["link"]
    return moving / max(1e-30, moving + shares["amp"])


def predict(rc: RunConfig, graph: OpGraph, ceilings: Ceilings):
    """Predicted Profile of one optimizer step on Bow IPUs (module docstring)."""
    k = knobs(rc)
    layers = placement(rc)
    p, m, r = len(layers), rc.run.grad_accum, rc.data_copies
    if p > 1 and m < 2 * p - 1:
        raise CompileError(
            f"pipelined training over {p} IPUs needs run.grad_accum >= {2 * p - 1} (the forward "
            f"and backward pipeline stages, 2p-1; PopTorch refuses fewer), got {m}"
        )
    costs = {name: layer_cost(graph.layer(name), graph, k) for name in ("embedding", "head")}
    if rc.model.n_layers:
        costs["block"] = layer_cost(graph.layer("block.0"), graph, k)

    uses = memory_per_ipu(rc, graph, k, layers, costs)
    for i, use in enumerate(uses):
        if use.total > k.sram_bytes:  # the reason is formatted only when refusing
            require_fits(
                f"ipu{i} In-Processor-Memory",
                use.total,
                k.sram_bytes,
                f"layers per IPU {' '.join(map(str, layers))}: IPU {i} needs {use.describe()}",
            )

    e = graph.precision.compute_bytes
    message = graph.batch_size * rc.model.seq_len * rc.model.hidden_size * e
    # IPU-Links join every IPU of a Pod rack, across its machines; GW-Links only join racks
    link = group_link(rc.hardware.links, k.options.ipu_link_domain, max(p, 1))
    transfer = 2.0 * p2p_s(message, link) if (p > 1 and link is not None) else 0.0
    train, busy, opt, tiles = [], [], [], []
    for i, n_blocks in enumerate(layers):
        held = ([("block", n_blocks)] if n_blocks else []) + ([("embedding", 1), ("head", 1)] if i == 0 else [])
        compute = sum(costs[name].train_s * count for name, count in held)
        train.append(compute + (transfer if held else 0.0))
        busy.append({part: sum(costs[name].parts[part] * count for name, count in held) for part in MECHANISMS})
        busy[-1]["link"] = transfer if held else 0.0
        opt.append(sum(costs[name].opt_s * count for name, count in held))
        tiles.append(max((costs[name].tiles for name, _ in held), default=0))

    timing = pipeline_time(train, m)
    offchip = 0.0
    if k.options.optimizer_state_offchip:  # read and write both moments of the IPU's parameters every step
        moment_bytes = 6.0 if graph.precision.param_dtype in ("fp16", "bf16") else 8.0
        # RTS: each replica streams its 1/r slice of the moments
        shards = r if k.options.replicated_tensor_sharding else 1
        offchip = max(2.0 * n * moment_bytes for n in ipu_params(graph, layers)) / shards / k.streaming_Bps
    update = max(opt) + offchip
    grads = [use.gradients for use in uses]
    allreduce = max(dp_allreduce_s(g, r, p, rc.hardware.links, k.options.ipu_link_domain) for g in grads)
    host = k.options.host_call_overhead_s / k.options.device_iterations
    step = timing.step_s + update + allreduce + host

    comm = []
    if p > 1:
        comm += [
            CommEvent("pp", "p2p", message, m * transfer, 2, count=2 * m),
            CommEvent("pp", "bubble", 0.0, timing.bubble_s, p),
        ]
    if r > 1:
        comm.append(CommEvent("dp", "allreduce", max(grads), allreduce, r))

    # one IPU doing a replica's work alone (capacity ignored): the Tier-2 baseline
    single_train = sum(t - (transfer if t else 0.0) for t in train)
    single_step = m * single_train + sum(opt) + host
    single_chip = graph.batch_size * m / single_step

    subtasks = [Subtask(f"ipu{i}", time_s=m * train[i], units={"tiles": float(tiles[i])}, flops=None) for i in range(p)]
    fractions = [use.total / k.sram_bytes for use in uses]
    bottleneck = timing.bottleneck
    total = max(1e-30, sum(busy[bottleneck].values()))  # the bottleneck's time by mechanism, as shares
    shares = {part: seconds / total for part, seconds in busy[bottleneck].items()}
    extra = {
        "ipu.stages": float(p),
        "ipu.replicas": float(r),
        "ipu.max_layers_per_ipu": float(max(layers)),
        "ipu.bottleneck_ipu": float(bottleneck),
        "ipu.max_memory_fraction": max(fractions),
        "ipu.exchange_fraction": shares["exchange"] + shares["copy"],
        "ipu.memory_share": memory_share(shares),
        "ipu.optimizer_s": update,
        "ipu.host_s": host,
        "host.fraction": host / step,
        "ipu.grain_elements": k.grain,
        **{f"ipu.memory_fraction.ipu{i}": f for i, f in enumerate(fractions)},
        **{f"ipu.share.{part}": share for part, share in shares.items()},
    }
    units = {"tiles": UnitUse(float(sum(tiles) * r), float(k.tiles * p * r))}
    memory = {"sram": max(use.total for use in uses)}
    if k.options.optimizer_state_offchip:
        memory["streaming"] = offchip * k.streaming_Bps / 2.0
    return make_profile(
        rc,
        SOURCE,
        step,
        subtask_kind="stage",
        units=units,
        subtasks=subtasks,
        memory=memory,
        comm=comm,
        single_chip_samples_per_s=single_chip,
        extra=extra,
        bottleneck=f"ipu{bottleneck}",
    )
