"""Collective and point-to-point seconds over a link (a stable API: validate mode compares the
distributed backends' measured collectives with these); ``nbytes`` is each rank's whole buffer.

Derivation: docs/perfmodel.md, "Shared primitives".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class LinkLike(Protocol):
    bandwidth_Bps: float
    latency_s: float


def _check(nbytes: float, ranks: int) -> None:
    if nbytes < 0:
        raise ValueError(f"message size must be non-negative, got {nbytes}")
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, got {ranks}")


def ring_allreduce_s(nbytes: float, ranks: int, link: LinkLike) -> float:
    """Seconds for a ring all-reduce of an ``nbytes`` buffer over ``ranks``: 2(n-1)/n*S/B + 2(n-1)*a."""
    return 2.0 * allgather_s(nbytes, ranks, link)


def allgather_s(nbytes: float, ranks: int, link: LinkLike) -> float:
    """Seconds for a ring all-gather producing an ``nbytes`` buffer on every rank: (n-1)/n*S/B + (n-1)*a."""
    _check(nbytes, ranks)
    if ranks == 1 or nbytes == 0:
        return 0.0
    n = ranks
    return (n - 1) / n * nbytes / link.bandwidth_Bps + (n - 1) * link.latency_s


def reduce_scatter_s(nbytes: float, ranks: int, link: LinkLike) -> float:
    """Seconds for a ring reduce-scatter of an ``nbytes`` buffer: (n-1)/n*S/B + (n-1)*a."""
    return allgather_s(nbytes, ranks, link)


def p2p_s(nbytes: float, link: LinkLike) -> float:
    """Seconds to send ``nbytes`` from one rank to another over one hop: S/B + a (0 for 0 bytes)."""
    _check(nbytes, 1)
    if nbytes == 0:
        return 0.0
    return nbytes / link.bandwidth_Bps + link.latency_s


def group_link(links, chips_per_node: int, ranks: int):
    """The link that paces a ring over ``ranks`` chips: intra while it fits one node, else inter
    (whichever exists; None when neither)."""
    intra = next((link for link in links if link.scope == "intra"), None)
    inter = next((link for link in links if link.scope == "inter"), None)
    if ranks <= chips_per_node:
        return intra or inter
    return inter or intra


@dataclass(frozen=True)
class HopLink:
    """A link derived from others (:func:`staged_link`, a wafer's fabric hop)."""

    bandwidth_Bps: float
    latency_s: float


def staged_link(link: LinkLike, host_Bps: float, hops: int = 2) -> HopLink:
    """``link`` with every byte also copied over ``hops`` host links of ``host_Bps``, store and forward."""
    if host_Bps <= 0 or link.bandwidth_Bps <= 0:
        raise ValueError("bandwidths must be positive")
    return HopLink(1.0 / (1.0 / link.bandwidth_Bps + hops / host_Bps), link.latency_s)
