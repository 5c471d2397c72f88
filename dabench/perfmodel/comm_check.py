"""Validate mode: the link model's price for the very collectives a parallel run measured
(:func:`comm_prediction_metrics`). Docs: docs/distributed.md, "Validate mode".
"""

from __future__ import annotations

from dabench.config.sections import RunConfig
from dabench.core.profile import CommEvent
from dabench.perfmodel.comm import allgather_s, group_link, p2p_s, reduce_scatter_s, ring_allreduce_s

_PRIMITIVES = {
    "allreduce": ring_allreduce_s,
    "allgather": allgather_s,
    "reduce_scatter": reduce_scatter_s,
    "p2p": lambda nbytes, ranks, link: p2p_s(nbytes, link),
}


def comm_prediction_metrics(rc: RunConfig, events: list[CommEvent], measured: dict[str, float]) -> dict[str, float]:
    """Predicted seconds per step of each measured event and the relative errors; events without
    a primitive or a measured transfer time are skipped."""
    out: dict[str, float] = {}
    total_predicted = total_measured = 0.0
    for event in events:
        primitive = _PRIMITIVES.get(event.op)
        seen = measured.get(f"tier2.comm_transfer_s.{event.op}")
        link = group_link(rc.hardware.links, rc.hardware.chips_per_node, event.ranks)
        if primitive is None or not seen or link is None:
            continue
        predicted = event.count * primitive(event.bytes, event.ranks, link)
        key = f"{event.strategy}.{event.op}"
        out[f"predict.comm_time_s.{key}"] = predicted
        out[f"predict.rel_error.comm_time_s.{key}"] = (predicted - seen) / seen
        total_predicted += predicted
        total_measured += seen
    if total_measured:
        out["predict.comm_time_s"] = total_predicted
        out["predict.rel_error.comm_time_s"] = (total_predicted - total_measured) / total_measured
    return out
