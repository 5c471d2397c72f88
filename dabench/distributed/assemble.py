"""All ranks' figures -> one :class:`~dabench.core.profile.Profile` (pure functions, no torch).
Derivation: docs/distributed.md, "What is measured".
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from dabench.config.sections import RunConfig
from dabench.core.profile import CommEvent, Profile, Subtask, UnitUse
from dabench.metrics.tier2 import bus_bandwidth, pipeline_bubble_fraction


def per_step(
    intervals: list[dict[str, Any]], steps: int, kind: str, op: str | None = None, field: str = "seconds"
) -> list[float]:
    """Sum of ``field`` over the intervals of ``kind`` (and ``op``) in each step."""
    totals = [0.0] * steps
    for item in intervals:
        if item["kind"] == kind and (op is None or item["op"] == op) and item["step"] < steps:
            totals[item["step"]] += item[field] if field != "count" else 1
    return totals


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def step_times(results: list[dict[str, Any]]) -> list[float]:
    """Per timed step, the slowest rank's step time."""
    return [max(r["step_s"][k] for r in results) for k in range(len(results[0]["step_s"]))]


def parallel_losses(rc: RunConfig, results: list[dict[str, Any]]) -> list[float]:
    """The job's loss per step (warm-up included): dp: mean of the ranks' losses (equal shares of
    the batch); tp: rank 0's (all ranks agree); pp: the last stages' losses, mean over replicas."""
    reported = [r["losses"] for r in results if r["losses"] and r["losses"][0] is not None]
    if rc.parallel.strategy == "tp":
        reported = reported[:1]
    return [_mean([losses[k] for losses in reported]) for k in range(len(reported[0]))]


def _collective_summary(results, key: str, steps_of) -> dict[str, dict[str, float]]:
    """Per op: calls, bytes and seconds per step (median over steps, mean over ranks)."""
    per_op: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        intervals, steps = r.get(key, []), steps_of(r)
        for op in sorted({i["op"] for i in intervals if i["kind"] == "comm"}):
            calls = per_step(intervals, steps, "comm", op, "count")
            per_op[op]["calls"].append(_median(calls))
            per_op[op]["bytes"].append(_median(per_step(intervals, steps, "comm", op, "bytes")))
            per_op[op]["seconds"].append(_median(per_step(intervals, steps, "comm", op)))
    return {op: {name: _mean(v) for name, v in values.items()} for op, values in per_op.items()}


def transfer_seconds(results, key: str, op: str, steps: int) -> float:
    """Seconds per step in ``op`` collectives net of waiting for a slower peer: the ranks run the
    same collectives in the same order, and the last rank to arrive at a collective sees only
    the transfer, so each call counts with its minimum over ranks (median over steps)."""
    calls = [
        [
            [i["seconds"] for i in r.get(key, []) if i["kind"] == "comm" and i["op"] == op and i["step"] == k]
            for k in range(steps)
        ]
        for r in results
    ]
    per_step_totals = []
    for k in range(steps):
        lists = [rank_calls[k] for rank_calls in calls]
        if len({len(x) for x in lists}) != 1:  # ranks disagree on the calls: no alignment possible
            per_step_totals.append(_mean([sum(x) for x in lists]))
        else:
            per_step_totals.append(sum(min(values) for values in zip(*lists, strict=False)))
    return _median(per_step_totals)


def _busbw_metrics(op: str, summary: dict[str, float], transfer_s: float, ranks: int) -> dict[str, float]:
    """Bytes and calls per step and bus bandwidth (GB/s) of ``op`` from its transfer time."""
    calls = summary["calls"]
    extra = {
        f"tier2.comm_bytes_per_step.{op}": summary["bytes"],
        f"tier2.comm_calls_per_step.{op}": calls,
        f"tier2.comm_transfer_s.{op}": transfer_s,
    }
    if calls and transfer_s > 0:
        extra[f"tier2.busbw_GBps.{op}"] = bus_bandwidth(op, summary["bytes"] / calls, transfer_s / calls, ranks) / 1e9
    return extra


def _dp_comm(results, replicas: int, group_key: str | None = None):
    """DP all-reduce event, metrics, and per-rank exposed time per step. ``group_key`` (a role
    field, e.g. "stage") splits the ranks into data-parallel groups that run different
    all-reduces (DP x PP: one group per stage); figures are per group, then averaged."""
    steps = len(results[0]["step_s"])
    exposed = [per_step(r["intervals"], steps, "exposed", "allreduce") for r in results]
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        groups[r["role"].get(group_key) if group_key else None].append(r)
    summaries, transfers = [], []
    for members in groups.values():
        summary = _collective_summary(members, "intervals", lambda r: steps).get("allreduce")
        if summary is not None:
            summaries.append(summary)
            transfers.append(transfer_seconds(members, "intervals", "allreduce", steps))
    if not summaries:
        return [], {}, exposed
    summary = {name: _mean([s[name] for s in summaries]) for name in ("calls", "bytes", "seconds")}
    calls = max(1, round(summary["calls"]))
    event = CommEvent(
        "dp", "allreduce", summary["bytes"] / calls, _mean([_median(e) for e in exposed]), replicas, calls
    )
    extra = _busbw_metrics("allreduce", summary, _mean(transfers), replicas)
    extra["tier2.comm_total_time_s.dp"] = summary["seconds"]
    return [event], extra, exposed


def _tp(rc: RunConfig, results):
    summary = _collective_summary(results, "instrumented_intervals", lambda r: r["instrumented_steps"])
    events, extra = [], {}
    for op, s in summary.items():
        calls = max(1, round(s["calls"]))
        events.append(CommEvent("tp", op, s["bytes"] / calls, s["seconds"], rc.parallel.degree, calls))
        transfer = transfer_seconds(results, "instrumented_intervals", op, results[0]["instrumented_steps"])
        extra.update(_busbw_metrics(op, s, transfer, rc.parallel.degree))
    comm_per_step = sum(s["seconds"] for s in summary.values())
    compute = [[t - comm_per_step for t in r["step_s"]] for r in results]
    subtasks = [
        Subtask(f"rank{r['rank']}", time_s=max(0.0, _median(c))) for r, c in zip(results, compute, strict=False)
    ]
    return events, extra, subtasks


def _dp(rc: RunConfig, results):
    events, extra, exposed = _dp_comm(results, rc.parallel.degree)
    subtasks = [
        Subtask(f"rank{r['rank']}", time_s=_median([t - e for t, e in zip(r["step_s"], ex, strict=False)]))
        for r, ex in zip(results, exposed, strict=False)
    ]
    return events, extra, subtasks


def _fsdp(rc: RunConfig, results):
    """ZeRO-1: dp's timed all-reduce; full / grad_op: FSDP's collectives are not timed, so no comm
    events and each rank's whole step as its subtask."""
    if rc.parallel.sharding == "optimizer":
        return _dp(rc, results)
    subtasks = [Subtask(f"rank{r['rank']}", time_s=_median(r["step_s"])) for r in results]
    return [], {"distributed.comm_timed": 0.0}, subtasks


def _pp(rc: RunConfig, results):
    par, steps = rc.parallel, len(results[0]["step_s"])
    events, extra, exposed = _dp_comm(results, par.replicas, "stage") if par.replicas > 1 else ([], {}, None)
    messages = 2 * par.micro_batches * rc.run.grad_accum  # activations forward + gradients backward
    boundaries = sorted({b for r in results for b in r["p2p_one_way_s"]}, key=int)
    reports = {b: [r["p2p_one_way_s"][b] for r in results if b in r["p2p_one_way_s"]] for b in boundaries}
    one_way = {int(b): _median(v) for b, v in reports.items()}
    p2p_bytes = float(results[0]["p2p_bytes"])
    stage_p2p, bubbles, stage_compute = [], [], defaultdict(list)
    for i, r in enumerate(results):
        stage = r["role"]["stage"]
        p2p_s = messages * sum(one_way.get(b, 0.0) for b in (stage - 1, stage) if 0 <= b < par.degree - 1)
        compute = per_step(r["intervals"], steps, "compute")
        if exposed is not None:
            compute = [c - e for c, e in zip(compute, exposed[i], strict=False)]
        bubble = [
            max(0.0, t - c - p2p_s - (exposed[i][k] if exposed is not None else 0.0))
            for k, (t, c) in enumerate(zip(r["step_s"], compute, strict=False))
        ]
        stage_p2p.append(p2p_s)
        bubbles.append(_median(bubble))
        stage_compute[stage].append(_median(compute))
    if one_way:
        mean_one_way, calls = _mean(list(one_way.values())), messages * (par.degree - 1)
        events.append(CommEvent("pp", "p2p", p2p_bytes, _mean(stage_p2p), 2, calls))
        summary = {"bytes": p2p_bytes * calls, "calls": float(calls)}
        extra.update(_busbw_metrics("p2p", summary, mean_one_way * calls, 2))
        extra["tier2.p2p_one_way_s"] = mean_one_way
    bubble_s = _mean(bubbles)
    events.append(CommEvent("pp", "bubble", 0.0, bubble_s, par.degree, 1))
    extra["tier2.bubble_fraction"] = bubble_s / _median(step_times(results))
    extra["tier2.bubble_fraction_ideal"] = pipeline_bubble_fraction(par.degree, par.micro_batches)
    subtasks = [Subtask(f"stage{s}", time_s=max(times)) for s, times in sorted(stage_compute.items())]
    return events, extra, subtasks


def assemble_profile(
    rc: RunConfig,
    results: list[dict[str, Any]],
    source: str,
    memory_level: str,
    units: dict[str, UnitUse],
    backend: str,
) -> Profile:
    """One measured Profile from all ranks' reports (see the module docstring)."""
    strategy = rc.parallel.strategy
    events, extra, subtasks = {"dp": _dp, "tp": _tp, "pp": _pp, "fsdp": _fsdp}[strategy](rc, results)
    memory = {f"{memory_level}.rank{r['rank']}": r["peak_memory_bytes"] for r in results}
    memory[memory_level] = max(memory.values())
    losses = parallel_losses(rc, results)
    extra["distributed.loss_final"] = losses[-1]
    extra["distributed.threads_per_rank"] = float(results[0]["threads"])
    baseline = results[0].get("baseline")
    single = None
    if baseline:
        single = baseline["samples_per_step"] / _median(baseline["step_s"])
        pairs = zip(losses, baseline["losses"], strict=False)
        extra["distributed.loss_max_abs_diff"] = max(abs(a - b) for a, b in pairs)
        extra["distributed.baseline_step_s"] = _median(baseline["step_s"])
    return Profile(
        mode="measure",
        source=source,
        step_times_s=step_times(results),
        samples_per_step=rc.samples_per_step,
        tokens_per_step=rc.tokens_per_step,
        chips=rc.parallel.n_chips,
        units=units,
        subtasks=subtasks,
        memory_bytes=memory,
        comm=events,
        single_chip_samples_per_s=single,
        extra_metrics=extra,
        tags={
            "subtask_kind": "stage" if strategy == "pp" else "rank",
            "distributed.strategy": strategy,
            "distributed.backend": backend,
            "distributed.step_time": "max over ranks per step",
        },
    )
