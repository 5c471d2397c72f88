"""Validate mode: the link model's prediction for the very collectives a parallel run measured.

For ``hardware.mode=validate`` the runner compares the whole measured run with the analytical
model's prediction of the whole run (``predict.tier2.comm_time_s``, where the model also has to
guess bucket counts, message sizes and overlap). This module isolates the communication model
itself: each measured comm event (its op, bytes per call, calls per step and ranks) is priced
with :mod:`dabench.perfmodel.comm` over the hardware's link (``conf/hardware/<name>.yaml``
``links:``, chosen by :func:`~dabench.perfmodel.comm.group_link`) and compared with the measured
*transfer* time of the same calls (``tier2.comm_transfer_s.<op>``: per call, the minimum over
ranks, i.e. without waiting for a slower peer; p2p: the ping-pong one-way time).

Metrics: ``predict.comm_time_s.<strategy>.<op>`` and ``predict.rel_error.comm_time_s.<strategy>.<op>``
per event, and ``predict.comm_time_s`` / ``predict.rel_error.comm_time_s`` over all of them;
relative error = (predicted - measured) / measured.
"""

from __future__ import annotations

from dabench.config.sections import RunConfig
from dabench.perfmodel.comm import allgather_s, group_link, p2p_s, reduce_scatter_s, ring_allreduce_s
from dabench.core.profile import CommEvent

_PRIMITIVES = {
    "allreduce": ring_allreduce_s,
    "allgather": allgather_s,
    "reduce_scatter": reduce_scatter_s,
    "p2p": lambda nbytes, ranks, link: p2p_s(nbytes, link),
}


def comm_prediction_metrics(rc: RunConfig, events: list[CommEvent], measured: dict[str, float]) -> dict[str, float]:
    """Predicted seconds per step of each measured event and the relative errors (see module
    doc). ``measured`` holds the run's metrics (``tier2.comm_transfer_s.<op>``). Events whose op
    has no primitive (bubble, alltoall) or no measured transfer time are skipped."""
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
