"""SN30 RDU model, the host side: host time per step and the collectives that leave the RDU
(tensor-parallel exchanges, data-parallel all-reduces; staged through the hosts between machines).

Pure functions of the run config and the model's knobs (:class:`dabench.platforms.rdu.knobs.RduKnobs`);
derivation: docs/perfmodel.md, "SN30 RDU (SambaNova)", Step, Tensor parallelism and Collectives.
"""

from __future__ import annotations

from dabench.config.sections import RunConfig
from dabench.perfmodel.comm import group_link, p2p_s, ring_allreduce_s, staged_link
from dabench.platforms.rdu.knobs import RduKnobs


def host_time(rc: RunConfig, k: RduKnobs) -> float:
    """Host time per step (docs/perfmodel.md, "SN30 RDU", Step)."""
    tokens = rc.run.batch_size * rc.run.grad_accum * rc.model.seq_len
    o = k.options
    positions = getattr(rc.model, "head_tokens", 0) or rc.model.seq_len  # the positions that reach the LM head
    return o.host_overhead_s + o.host_logit_s * float(positions * rc.model.vocab_size) + tokens * 8 / o.host_link_Bps


def allreduce_s(nbytes: float, ranks: int, span: int, rc: RunConfig, k: RduKnobs) -> float:
    """Seconds for one ring all-reduce of ``nbytes`` over ``ranks`` spanning ``span`` chips
    (docs/perfmodel.md, "SN30 RDU", Collectives between machines)."""
    hw = rc.hardware
    link = group_link(hw.links, hw.chips_per_node, span)
    if ranks <= 1 or link is None:
        return 0.0
    if span <= hw.chips_per_node or k.options.reduce_on_rdu:
        return ring_allreduce_s(nbytes, ranks, link)
    return ring_allreduce_s(nbytes, ranks, staged_link(link, k.options.host_link_Bps)) + k.options.machine_collective_s


def tp_exchange_s(nbytes: float, t: int, rc: RunConfig, k: RduKnobs) -> float:
    """Seconds of one tensor-parallel split region's p2p transfers over ``t`` RDUs
    (docs/perfmodel.md, "SN30 RDU", Tensor parallelism)."""
    if t <= 1:
        return 0.0
    hw = rc.hardware
    local = min(t, hw.chips_per_node) - 1
    remote = t - 1 - local
    seconds = 0.0
    intra = group_link(hw.links, hw.chips_per_node, 1)
    if local and intra is not None:
        seconds = 2 * local * p2p_s(nbytes, intra)
    inter = group_link(hw.links, hw.chips_per_node, t)
    if remote and inter is not None:
        hop = staged_link(inter, k.options.host_link_Bps)
        staged = 2 * remote * p2p_s(nbytes, hop) + 2 * k.options.machine_collective_s
        seconds = max(seconds, staged)  # the fabric and the host path run side by side
    return seconds
