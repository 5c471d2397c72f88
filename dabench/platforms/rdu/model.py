"""SambaNova RDU (SN30, SN40L): the graph cut into sections that run one after another.

``predict(rc, graph, ceilings)`` -> ``Profile(mode="predict")`` of one optimizer step, one subtask
per stage (op and phase); ``ceilings`` are unused (the model reads its spec). ``parallel=none|dp|tp``;
CapacityError when the training state does not fit DDR. Memory tiers: every level of the spec with
a bandwidth (SN30: DDR only; SN40L: SRAM, HBM, DDR) may hold a tensor class (:func:`place`), whose
off-chip traffic is then priced at that tier's bandwidth. Knobs: platforms/rdu/knobs.py.

Derivation: docs/perfmodel.md, "SN30 RDU (SambaNova)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dabench.config.sections import RunConfig
from dabench.core.ceilings import Ceilings
from dabench.core.profile import CommEvent, Subtask, UnitUse
from dabench.core.status import ConfigError
from dabench.perfmodel.assemble import make_profile, op_width, peak_flops, require_strategy, weight_params
from dabench.perfmodel.capacity import require_fits
from dabench.perfmodel.knobs import knobs_for
from dabench.platforms.rdu.host import allreduce_s, host_time, tp_exchange_s
from dabench.platforms.rdu.knobs import RduKnobs, RduOptions
from dabench.workload.opgraph import Op, OpGraph

SOURCE = "perfmodel.rdu"
SPLIT_CLASSES = ("matmul", "attention", "embedding", "loss")  # work divided under tensor parallelism
#: the tensor classes placed in memory tiers, most often touched first (each micro-batch, each step)
TENSORS = ("weights", "activations", "optimizer")


def knobs(rc: RunConfig) -> RduKnobs:
    hw = rc.hardware
    o: RduOptions = knobs_for(hw)
    chip_pcus, chip_pmus = hw.unit_count("pcus"), hw.unit_count("pmus")
    chip_tiles = int(hw.units("tiles") or 8)
    if o.tiles > chip_tiles:
        raise ConfigError("hardware.options.tiles", o.tiles, f"must be at most the chip's {chip_tiles} tiles")
    share = o.tiles / chip_tiles * o.resources_scaling
    return RduKnobs(
        options=o,
        pcus=max(1, int(chip_pcus * share)),
        pmus=max(1, int(chip_pmus * share)),
        chip_pcus=chip_pcus,
        chip_pmus=chip_pmus,
        pmu_bytes=hw.capacity("sram") / chip_pmus,
        pcu_flops=peak_flops(rc, "bf16") / chip_pcus,
        ddr_Bps=hw.bandwidth("ddr"),
        tile32=o.tiling_accum == "fp32",
        wgrad32=o.weight_grad_reduce == "fp32",
    )


@dataclass(frozen=True)
class Placement:
    """Where each tensor class lives (:data:`TENSORS` -> memory level) and the bytes per level."""

    tiers: dict[str, str]
    placed: dict[str, float]

    def describe(self) -> str:
        return ", ".join(f"{name} in {level}" for name, level in self.tiers.items())


def place(rc: RunConfig, graph: OpGraph, k: RduKnobs, t: int) -> Placement | None:
    """Each tensor class in the fastest tier that still holds it, most often touched first
    (docs/perfmodel.md, "SN30 RDU", Memory tiers): the tiers are the spec's levels with a bandwidth,
    the on-chip SRAM less the PMUs the sections may use; what fits none goes to the slowest (DDR),
    where the capacity check refuses it. None with one tier (SN30: DDR only)."""
    tiers = sorted((level for level in rc.hardware.memory if level.bandwidth_Bps), key=lambda lv: -lv.bandwidth_Bps)
    if len(tiers) < 2:
        return None
    weights = graph.params * graph.precision.param_bytes * 2 / t  # weights and gradients; AdamW's moments alike
    need = {"weights": weights, "activations": graph.saved_bytes / t, "optimizer": weights}
    room = {level.name: float(level.capacity_bytes or 0.0) for level in tiers}
    if "sram" in room:
        room["sram"] -= k.pmus * k.pmu_bytes
    where, placed = {}, {level.name: 0.0 for level in tiers}
    for name in TENSORS:
        level = next((lv for lv in tiers if need[name] <= room[lv.name]), tiers[-1])
        room[level.name] -= need[name]
        placed[level.name] += need[name]
        where[name] = level.name
    return Placement(where, placed)


def _priced(k: RduKnobs, placement: Placement | None, hw) -> RduKnobs:
    """``k`` with each tensor class's traffic priced at its tier's bandwidth (a share of DDR's)."""
    if placement is None:
        return k
    price = tuple(k.ddr_Bps / hw.bandwidth(placement.tiers[name]) for name in TENSORS)
    return replace(k, price=price)


@dataclass(slots=True)  # not frozen: built per op and phase in every prediction, and a frozen __init__ is slower
class Stage:
    """One op of one layer and phase, as a section stage on one chip."""

    name: str
    phase: str
    flops: float
    work: float  #: 16-bit operations: FLOPs, a 32-bit one counted twice
    weight_pmus: int
    cap: int  #: most PCUs the stage can use
    #: off-chip bytes when the stage is its own section (o0); these three are DDR-equivalent bytes
    #: (each tensor class's bytes x ``RduKnobs.price``): the bytes themselves where all live in DDR
    ddr_alone: float
    ddr_fused: float  #: off-chip bytes inside a fused section (weights, grads, saved activations)
    buffer_pmus: int = 0  #: PMUs of its output buffers (``stage_buffer_pmus`` buffers of one sample's output)
    out_bytes: float = 0.0  #: one sample's output (seq x width elements); 0 for optimizer stages


def _work(op: Op, k: RduKnobs) -> float:
    """16-bit operations of a forward or backward op under mixed precision with SambaFlow's knobs: a
    PCU lane does one 32-bit or two 16-bit operations, and a GEMM runs 16-bit only when its inputs and
    its accumulation are (docs/perfmodel.md, SN30 RDU, Precision)."""
    flops, cls = op.flops, op.op_class
    if cls == "loss":
        return 2 * flops if k.options.fp32_logits else flops
    if cls == "elementwise" and op.name.startswith("residual"):
        return 2 * flops if k.options.fp32_skip_add else flops
    if cls not in ("matmul", "attention"):
        return flops
    tile = 2 * flops if k.tile32 else flops
    if op.phase != "bwd" or cls == "attention":
        return tile
    # backward of a weighted GEMM: half data gradient (tile accumulation), half weight gradient
    return tile / 2 + (flops if k.wgrad32 else flops / 2)


def _stages_of(
    ops: tuple[Op, ...], layer_name: str, saved: dict[str, float], graph: OpGraph, k: RduKnobs, t: int
) -> list[Stage]:
    """Stages of one layer's ``ops`` (docs/perfmodel.md, "SN30 RDU"); fields read once per layer
    (the hot path of every RDU prediction)."""
    model = graph.model
    w = graph.precision.param_bytes  # weights; gradients in the same dtype
    wg = w + w
    seq, compute_bytes = model.seq_len, graph.precision.compute_bytes
    fp32 = compute_bytes == 4
    scale = 2 if fp32 else 1  # 16-bit operations per FLOP; the AdamW update runs on fp32 masters:
    opt_scale = 2 if fp32 or w == 4 else 1
    knobbed = not fp32 and (k.options.fp32_logits or k.options.fp32_skip_add or k.tile32 or k.wgrad32)
    pmu_bytes, lanes, pcus, nbuf = k.pmu_bytes, k.options.pcu_lanes, k.pcus, k.options.stage_buffer_pmus
    fw, fa, fo = k.price
    fo = max(fw, fo)  # the update reads and writes the weights and the optimizer state: the slower paces it
    tiered = k.price != (1.0, 1.0, 1.0)
    opt_buffers = nbuf * math.ceil(pmu_bytes / pmu_bytes)  # the optimizer's tensor slice: one PMU each
    ceil = math.ceil
    out = []
    for op in ops:
        name, phase = op.name, op.phase
        split = t if op.op_class in SPLIT_CLASSES else 1
        width = op_width(op, model)
        cap = pcus if width == 0 else max(1, ceil(width / split / lanes))
        alone = op.bytes / split
        if phase == "fwd":
            weights = weight_params(op, model) * w / t
            fused = weights * fw + op.saved_bytes / split * fa
        elif phase == "bwd":
            params = saved.get("params:" + name, 0)
            weights = params * wg / t
            fused = weights * fw + saved.get(name, 0.0) / split * fa
        else:
            out.append(
                Stage(
                    f"{layer_name}.{name}.{phase}",
                    phase,
                    op.flops / split,
                    op.flops * opt_scale / split,
                    0,
                    cap,
                    alone * fo if tiered else alone,
                    op.bytes / t * fo if tiered else op.bytes / t,
                    opt_buffers,
                )
            )
            continue
        if tiered:  # an unfused stage reads its weights from their tier, its activations from theirs
            alone = min(weights, alone) * fw + max(0.0, alone - weights) * fa
        # one sample's output (seq x width elements) per buffer
        sample = seq * max(1, width // split) * compute_bytes
        out.append(
            Stage(
                f"{layer_name}.{name}.{phase}",
                phase,
                op.flops / split,
                (_work(op, k) if knobbed else op.flops * scale) / split,
                ceil(weights / pmu_bytes),
                cap,
                alone,
                fused,
                nbuf * ceil(sample / pmu_bytes),
                sample * fa if tiered else sample,
            )
        )
    return out


def _layer_stages(graph: OpGraph, k: RduKnobs, t: int) -> dict[str, dict[str, list[Stage]]]:
    """{layer kind: {phase: stages in execution order}} for embedding, one block and the head."""
    out = {}
    for name in ("embedding", "block.0", "head") if graph.model.n_layers else ("embedding", "head"):
        layer = graph.layer(name)
        saved = {}
        for op in layer.ops:
            if op.phase == "fwd":
                saved[op.name] = op.saved_bytes
                saved["params:" + op.name] = weight_params(op, graph.model)
        phases: dict[str, list[Stage]] = {"fwd": [], "bwd": [], "opt": []}
        for stage in _stages_of(layer.ops, name, saved, graph, k, t):
            phases[stage.phase].append(stage)
        phases["bwd"].reverse()  # backward runs the layer's ops last to first
        out[layer.kind] = phases
    return out


def _sequence(graph: OpGraph, stages: dict[str, dict[str, list[Stage]]], phase: str) -> list[tuple[list[Stage], int]]:
    """(stages of one layer, repeat count) in execution order for ``phase``; blocks folded."""
    n = graph.model.n_layers
    order = ["embedding", "block", "head"] if phase != "bwd" else ["head", "block", "embedding"]
    return [
        (stages[kind][phase], n if kind == "block" else 1)
        for kind in order
        if kind in stages and (kind != "block" or n)
    ]


@dataclass(slots=True)
class Section:
    stages: tuple[Stage, ...]
    fused: bool
    count: int = 1  #: identical sections (one per decoder block)
    #: per sample, the activations crossing DDR at the section's edges (fused sections only): the
    #: output of the stage before its first (read back) and of its last stage (written out)
    boundary_bytes: float = 0.0


def sections(graph: OpGraph, k: RduKnobs, t: int) -> dict[str, list[Section]]:
    """Sections per phase, in execution order, for the compile mode (``o0`` / ``o1`` / ``o3``)."""
    stages = _layer_stages(graph, k, t)
    out: dict[str, list[Section]] = {}
    for phase in ("fwd", "bwd", "opt"):
        seq = _sequence(graph, stages, phase)
        if k.options.compile_mode == "o0":
            out[phase] = [Section((s,), False, count) for layer, count in seq for s in layer]
        elif k.options.compile_mode == "o1":
            out[phase] = [sec for layer, count in seq for sec in _pack(layer, k, count)]
        else:
            flat = [s for layer, count in seq for _ in range(count) for s in layer]
            out[phase] = _pack(flat, k, 1)
        _set_boundaries(out[phase])
    return out


def _set_boundaries(secs: list[Section]) -> None:
    """Between fused sections the activation goes round DDR: the producing section writes its last
    stage's output, the next one reads it back (inside a section stages stream to each other
    through PMUs; an unfused stage's own traffic, ``ddr_alone``, already holds its input and output)."""
    before = 0.0
    for sec in secs:
        last = sec.stages[-1].out_bytes
        if sec.fused:
            sec.boundary_bytes = before + last
        before = last


def _pack(stages: list[Stage], k: RduKnobs, count: int) -> list[Section]:
    """Greedy: add stages to the open section while its PMUs (weights + buffers) and PCUs (one per
    stage at least) fit; a stage too large for any section runs alone (its weights streamed)."""
    packed, current, pmus = [], [], 0
    for stage in stages:
        need = stage.weight_pmus + stage.buffer_pmus
        if current and (pmus + need > k.pmus or len(current) + 1 > k.pcus):
            packed.append(Section(tuple(current), len(current) > 1, count))
            current, pmus = [], 0
        current.append(stage)
        pmus += need
    if current:
        packed.append(Section(tuple(current), len(current) > 1, count))
    return packed


def allocate(section: Section, k: RduKnobs) -> list[int]:
    """PCUs per stage: water-filling of the section's PCUs by FLOPs under each stage's cap, rounded
    down to a power of two (docs/perfmodel.md, "SN30 RDU")."""
    total = k.pcus
    stages = section.stages
    flops = [stage.work for stage in stages]
    caps = [stage.cap if stage.cap < total else total for stage in stages]
    alloc = [1.0] * len(flops)
    remaining = total - len(flops)
    free = [i for i, cap in enumerate(caps) if cap > 1]
    for _ in range(8):
        if not free or remaining <= 0:
            break
        work = sum([flops[i] for i in free])  # same additions, in the same order, as a generator
        if work <= 0:
            break
        scale = remaining / work
        share = {i: alloc[i] + scale * flops[i] for i in free}
        capped = [i for i in free if share[i] >= caps[i]]
        if not capped:
            for i in free:
                alloc[i] = share[i]
            break
        for i in capped:
            remaining -= caps[i] - alloc[i]
            alloc[i] = caps[i]
        free = [i for i in free if alloc[i] < caps[i]]
    # the compiler parallelises a stage by a power-of-two factor (tensor dims tile evenly): the
    # largest one within its share (every share is at least 1: each stage starts with one PCU)
    return [1 << (max(1, int(a)).bit_length() - 1) for a in alloc]


@dataclass(slots=True)
class SectionTime:
    time_s: float
    compute_s: float
    ddr_s: float
    pcus: int
    pmus: int
    stage_times: tuple[float, ...]
    stage_pcus: tuple[int, ...]
    #: mean / max of the section's stage times (its stages run concurrently)
    load_imbalance: float


def section_time(section: Section, k: RduKnobs, samples: int) -> SectionTime:
    """The section's time: its samples pipeline through the stages (fill and drain)."""
    pcus = allocate(section, k)
    rate = k.pcu_flops * k.options.pcu_efficiency
    stages = section.stages
    fused = section.fused
    times_list, ddr_bytes, weight_pmus, buffer_pmus = [], 0, 0, 0
    for s, p in zip(stages, pcus, strict=False):
        times_list.append(s.work / (p * rate))
        ddr_bytes += s.ddr_fused if fused else s.ddr_alone
        weight_pmus += s.weight_pmus
        buffer_pmus += s.buffer_pmus
    times = tuple(times_list)
    ddr_bytes += section.boundary_bytes * samples
    passes = 1
    used_pmus = weight_pmus + buffer_pmus
    if used_pmus > k.pmus:  # one oversized stage: stream its weights
        passes = math.ceil(used_pmus / k.pmus)
    longest = max(times, default=0.0)
    compute = longest * (samples + len(times) - 1) / samples
    ddr = ddr_bytes * passes / k.ddr_Bps
    pmus = min(k.pmus, used_pmus)
    li = sum(times) / len(times) / longest if longest else 1.0
    step = max(compute, ddr) + k.options.section_switch_s
    return SectionTime(step, compute, ddr, sum(pcus), pmus, times, tuple(pcus), li)


def _step(rc: RunConfig, graph: OpGraph, k: RduKnobs, t: int, data_copies: int):
    plan = sections(graph, k, t)
    m = rc.run.grad_accum
    # o3 packs the blocks' stages into a sequence of sections that repeats: a section of the same
    # stages, fusion and boundary traffic is timed once
    times: dict[tuple, SectionTime] = {}

    def timed_once(sec: Section) -> SectionTime:
        key = (sec.fused, sec.boundary_bytes, *map(id, sec.stages))
        if key not in times:
            times[key] = section_time(sec, k, graph.batch_size)
        return times[key]

    timed = {phase: [(sec, timed_once(sec)) for sec in secs] for phase, secs in plan.items()}
    repeat = {"fwd": m, "bwd": m, "opt": 1}
    device = sum(repeat[ph] * sec.count * st.time_s for ph, items in timed.items() for sec, st in items)
    comm: list[CommEvent] = []
    tp_s = 0.0
    if t > 1:
        message = graph.batch_size * rc.model.seq_len * rc.model.hidden_size * graph.precision.compute_bytes
        calls = 4 * rc.model.n_layers * m
        tp_s = calls * tp_exchange_s(message, t, rc, k)
        comm.append(CommEvent("tp", "p2p", message, tp_s, t, count=calls))
    host = host_time(rc, k)
    dp_s = 0.0
    if data_copies > 1:
        grads = graph.params * graph.precision.param_bytes / t
        dp_s = allreduce_s(grads, data_copies, rc.parallel.n_chips, rc, k)
        comm.append(CommEvent("dp", "allreduce", grads, dp_s, data_copies))
    return device + tp_s + host + dp_s, device, host, timed, repeat, comm


def predict(rc: RunConfig, graph: OpGraph, ceilings: Ceilings):
    """Predicted Profile of one optimizer step on SN30 RDU(s) (module docstring)."""
    require_strategy(
        rc,
        ("none", "dp", "tp"),
        "SambaFlow scales GPT-2 with tensor parallelism "
        "(--tensor-parallel, parallel=tp) and data parallelism (parallel=dp)",
    )
    k = knobs(rc)
    t = rc.parallel.degree if rc.parallel.strategy == "tp" else 1
    placement = place(rc, graph, k, t)
    k = _priced(k, placement, rc.hardware)
    step, device, host, timed, repeat, comm = _step(rc, graph, k, t, rc.data_copies)

    weighted_pcus = weighted_pmus = weighted_li = total = 0.0
    per_stage: dict[str, list[float]] = {}  # stage name -> [seconds, FLOPs, PCU-seconds] over the step
    n_sections = 0
    section_pcus = section_pmus = 0  # summed over the compiled sections (each section once, not per run)
    most_pcus = most_pmus = 0
    ddr_bound = 0
    for phase, items in timed.items():
        rep = repeat[phase]
        for sec, st in items:
            runs = rep * sec.count
            span = runs * st.time_s
            total += span
            weighted_pcus += span * st.pcus
            weighted_pmus += span * st.pmus
            weighted_li += span * st.load_imbalance
            n_sections += sec.count
            section_pcus += sec.count * st.pcus
            section_pmus += sec.count * st.pmus
            most_pcus, most_pmus = max(most_pcus, st.pcus), max(most_pmus, st.pmus)
            if st.ddr_s >= st.compute_s:
                ddr_bound += span
            for stage, stage_s, p in zip(sec.stages, st.stage_times, st.stage_pcus, strict=False):
                acc = per_stage.setdefault(stage.name, [0.0, 0.0, 0.0])
                busy = runs * stage_s
                acc[0] += busy
                acc[1] += runs * stage.flops
                acc[2] += busy * p
    # one subtask per op and phase (every decoder block's share of it summed: blocks are identical),
    # its PCUs time-weighted over the sections that ran it
    subtasks = [
        Subtask(name, time_s=secs, units={"pcus": pcu_s / secs if secs else 0.0}, flops=flops)
        for name, (secs, flops, pcu_s) in per_stage.items()
    ]
    total = max(total, 1e-30)
    chips = rc.parallel.n_chips
    # allocation as the compiler's per-section reports give it (and as profiles/sambaflow.py reads a
    # real compile folder): the mean over compiled sections of used / the chip's units, unweighted
    # (a compile report has no section times); the time-weighted mean is kept as rdu.* metrics
    units = {
        "pcus": UnitUse(section_pcus / max(n_sections, 1), float(k.chip_pcus)),
        "pmus": UnitUse(section_pmus / max(n_sections, 1), float(k.chip_pmus)),
    }
    extra = {
        # sections run one after another and only the stages of one section run concurrently, so
        # the run's LI is the time-weighted mean of the sections' LIs (replaces the pooled value)
        "tier1.load_imbalance": weighted_li / total,
        "rdu.sections": float(n_sections),
        "rdu.allocation_ratio_time_weighted.pcus": weighted_pcus / total / k.chip_pcus,
        "rdu.allocation_ratio_time_weighted.pmus": weighted_pmus / total / k.chip_pmus,
        "rdu.allocation_ratio_max.pcus": most_pcus / k.chip_pcus,  # the busiest section's
        "rdu.allocation_ratio_max.pmus": most_pmus / k.chip_pmus,
        "rdu.ddr_bound_fraction": ddr_bound / total,
        "rdu.device_s": device,
        "host.fraction": host / step,
        "rdu.chips": float(chips),
    }
    single = None
    if chips > 1:
        one = _priced(knobs(rc), place(rc, graph, k, 1), rc.hardware) if placement else k
        one_step = _step(rc, graph, one, 1, 1)[0]
        single = rc.run.batch_size * rc.run.grad_accum / one_step
    # the weights, gradients, AdamW moments and saved activations live in DDR between sections (SN30),
    # or each in its tier (place)
    state = graph.params * (graph.precision.param_bytes * 4) / t
    ddr = state + graph.saved_bytes / t if placement is None else placement.placed["ddr"]
    why = f"training state {state / 2**30:.1f} GiB + saved activations {graph.saved_bytes / t / 2**30:.1f} GiB per chip"
    require_fits(
        "rdu DDR", ddr, rc.hardware.capacity("ddr"), why if placement is None else f"{why}; {placement.describe()}"
    )
    memory = {"ddr": ddr, "sram": float(max(st.pmus for items in timed.values() for _, st in items) * k.pmu_bytes)}
    tags = {"compile_mode": k.options.compile_mode}
    if placement is not None:
        memory = {**placement.placed, "sram": memory["sram"] + placement.placed.get("sram", 0.0)}
        tags["placement"] = placement.describe()
        extra.update({f"rdu.tier_price.{name}": float(k.price[i]) for i, name in enumerate(TENSORS)})
    return make_profile(
        rc,
        SOURCE,
        step,
        subtask_kind="section_stage",
        units=units,
        subtasks=subtasks,
        memory=memory,
        comm=comm,
        single_chip_samples_per_s=single,
        extra=extra,
        tags=tags,
    )
