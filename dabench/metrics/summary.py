"""Profile + op graph + hardware ceilings -> the flat metric dict that MLflow records.
Definitions: docs/metrics.md.
"""

from __future__ import annotations

from dabench.core.ceilings import Ceilings
from dabench.core.profile import Profile
from dabench.metrics import tier1, tier2
from dabench.metrics.diagnosis import diagnose
from dabench.metrics.roofline import RooflinePoint, point, ridge_point
from dabench.workload.opgraph import OpGraph

CONCURRENT_SUBTASK_KINDS = ("stage", "kernel", "section_stage", "rank")


def step_work(graph: OpGraph, samples_per_step: int, data_copies: int) -> tuple[float, float]:
    """(FLOPs, bytes) of one optimizer step over all chips; see the module docstring."""
    per_sample = 1.0 / graph.batch_size
    flops = (graph.flops("fwd") + graph.flops("bwd")) * per_sample * samples_per_step
    moved = (graph.bytes("fwd") + graph.bytes("bwd")) * per_sample * samples_per_step
    return flops + graph.flops("opt") * data_copies, moved + graph.bytes("opt") * data_copies


def roofline_points(graph: OpGraph, profile: Profile, ceilings: Ceilings, data_copies: int) -> list[RooflinePoint]:
    """One point per op class (achieved only when the profile timed that class) and one for the
    whole step (achieved from the median step time). Work is per chip."""
    chips, roofs = profile.chips, (ceilings.peak_flops, ceilings.bandwidth_Bps)
    scale = profile.samples_per_step / graph.batch_size / chips
    times = profile.class_times_s
    points = [
        point(op_class, flops * scale, moved * scale, times.get(op_class), *roofs)
        for op_class, (flops, moved) in graph.by_class(("fwd", "bwd")).items()
    ]
    opt_flops, opt_bytes = graph.flops("opt") * data_copies / chips, graph.bytes("opt") * data_copies / chips
    points.append(point("optimizer", opt_flops, opt_bytes, times.get("optimizer"), *roofs))
    flops, moved = step_work(graph, profile.samples_per_step, data_copies)
    points.append(point("step", flops / chips, moved / chips, profile.median_step_s, *roofs))
    return points


def subtask_times(profile: Profile) -> list[float]:
    """Per-subtask times, from times or (as 1/rate) from rates."""
    times = [s.time_s for s in profile.subtasks if s.time_s is not None]
    if times:
        return times
    return [1.0 / s.rate for s in profile.subtasks if s.rate]


def compute_metrics(profile: Profile, graph: OpGraph, ceilings: Ceilings, data_copies: int = 1) -> dict[str, float]:
    """All Tier-1 (and, for multi-chip runs, Tier-2) metrics of one run as {name: value}."""
    steps = profile.step_times_s
    median = profile.median_step_s
    metrics: dict[str, float] = {
        "throughput.samples_per_s": profile.samples_per_s,
        "throughput.tokens_per_s": profile.tokens_per_s,
        "step_time.median_s": median,
        "step_time.p10_s": tier1.percentile(steps, 10),
        "step_time.p90_s": tier1.percentile(steps, 90),
        "step_time.n": float(len(steps)),
        "chips": float(profile.chips),
    }
    flops, moved = step_work(graph, profile.samples_per_step, data_copies)
    achieved = flops / (median * profile.chips)
    achieved_bw = moved / (median * profile.chips)
    metrics.update(
        {
            "work.flops_per_step": flops,
            "work.bytes_per_step": moved,
            "work.params": float(graph.params),
            "perf.achieved_tflops": achieved / 1e12,
            "perf.peak_tflops": ceilings.peak_flops / 1e12,
            "perf.achieved_bandwidth_GBps": achieved_bw / 1e9,
            "tier1.compute_efficiency": tier1.compute_efficiency(achieved, ceilings.peak_flops),
            f"tier1.bandwidth_efficiency.{ceilings.memory_level}": tier1.bandwidth_efficiency(
                achieved_bw, ceilings.bandwidth_Bps
            ),
        }
    )
    if profile.units:
        metrics.update(tier1.allocation_metrics(profile.units))
    times = subtask_times(profile)
    if times:
        metrics.update(
            {
                "tier1.load_imbalance": tier1.load_imbalance(times),
                "tier1.subtask_max_s": max(times),
                "tier1.subtask_mean_s": sum(times) / len(times),
                "tier1.subtasks": float(len(times)),
            }
        )
    metrics.update({f"memory.peak_bytes.{level}": used for level, used in profile.memory_bytes.items()})
    # the step's roofline point (the last of roofline_points), without the per-class points
    step_point = point(
        "step", flops / profile.chips, moved / profile.chips, median, ceilings.peak_flops, ceilings.bandwidth_Bps
    )
    metrics.update(
        {
            "roofline.step.intensity": step_point.intensity,
            "roofline.step.attainable_tflops": step_point.attainable / 1e12,
            "roofline.step.roof_share": achieved / step_point.attainable,
            "roofline.ridge_intensity": ridge_point(ceilings.peak_flops, ceilings.bandwidth_Bps),
        }
    )
    if profile.comm or profile.chips > 1:
        comm_time = sum(e.time_s for e in profile.comm if e.op != "bubble")
        bubble = sum(e.time_s for e in profile.comm if e.op == "bubble")
        by_strategy = tier2.strategy_breakdown((e.strategy, e.time_s) for e in profile.comm if e.op != "bubble")
        metrics.update(
            {
                "tier2.comm_fraction": tier2.comm_fraction(comm_time, median),
                "tier2.comm_time_s": comm_time,
                "tier2.bubble_time_s": bubble,
                **{f"tier2.comm_time_s.{strategy}": seconds for strategy, seconds in by_strategy.items()},
            }
        )
        if profile.single_chip_samples_per_s:
            metrics["tier2.scaling_efficiency"] = tier2.scaling_efficiency(
                profile.samples_per_s, profile.single_chip_samples_per_s, profile.chips
            )
    metrics.update(profile.extra_metrics)
    metrics["diagnosis.memory_bound"] = 1.0 if step_point.bound == "memory" else 0.0
    return metrics


def diagnosis(
    profile: Profile, graph: OpGraph, ceilings: Ceilings, metrics: dict[str, float], data_copies: int = 1
) -> tuple[str, str]:
    """The bottleneck label and its reason, from already computed metrics."""
    step_point = roofline_points(graph, profile, ceilings, data_copies)[-1]
    return diagnose(
        comm_fraction=metrics.get("tier2.comm_fraction"),
        host_fraction=metrics.get("host.fraction"),
        load_imbalance=metrics.get("tier1.load_imbalance"),
        subtasks_concurrent=profile.tags.get("subtask_kind") in CONCURRENT_SUBTASK_KINDS,
        intensity=step_point.intensity,
        ridge=step_point.ridge,
        roof_share=step_point.achieved / step_point.attainable if step_point.achieved else None,
    )
