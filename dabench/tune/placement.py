"""Pipeline placements: how ``n_layers`` decoder layers are split over ``stages`` pipeline stages.

A placement is a composition of ``n_layers`` into ``stages`` parts, first stage first, e.g.
``(0, 4, 4, 4)`` for 12 layers on 4 IPUs. Stage 0 has its own bounds (``min_first`` ..
``max_first`` layers) because it also holds the embedding (and, on Graphcore's GPT-2 layout, the
LM head): Graphcore's scripts always put 0 layers on IPU 0 (DABench-LLM artifact, paper-notes
section 5.1). Every other stage holds at least ``min_other`` layers.

Counting (stars and bars): with f layers on stage 0, the other k - 1 stages share
``R = n_layers - f - min_other * (k - 1)`` free layers in ``C(R + k - 2, k - 2)`` ways; the
placements number the sum of that over the allowed f.

A searchable form (:func:`placement_from_params`): stage 0's layer count f, a ``skew`` in
[0, 1] and one value z_i in [0, 1] per other stage. The free layers of stages 1..k-1 are
apportioned by weights ``w_i = exp(SKEW_RANGE * skew * (z_i - 0.5))``: skew 0 splits them as evenly
as possible (what minimises the most loaded IPU); larger skews reach uneven placements up to a
weight ratio of ``exp(SKEW_RANGE)`` (about 400:1), so every placement of up to ~400 layers is
reachable; :func:`stage_values` gives the z values of a wanted placement. All functions are pure.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Iterator, Sequence

from dabench.core.placement import Placement

SKEW_RANGE = 6.0  #: log of the largest stage-weight ratio a skew of 1 allows


def _first_range(n_layers: int, stages: int, min_first: int, min_other: int, max_first: int | None) -> range:
    if stages < 1:
        return range(0)
    if stages == 1:
        ok = n_layers >= min_first and (max_first is None or n_layers <= max_first)
        return range(n_layers, n_layers + 1) if ok else range(0)
    top = n_layers - min_other * (stages - 1)
    if max_first is not None:
        top = min(top, max_first)
    return range(min_first, top + 1)


def compositions(total: int, parts: int, minimum: int) -> Iterator[tuple[int, ...]]:
    """Every way to write ``total`` as ``parts`` ordered parts of at least ``minimum``."""
    free = total - minimum * parts
    if parts < 1 or free < 0:
        if parts == 0 and total == 0:
            yield ()
        return
    slots = free + parts - 1
    for bars in combinations(range(slots), parts - 1):
        edges = (-1, *bars, slots)
        yield tuple(minimum + edges[i + 1] - edges[i] - 1 for i in range(parts))


def placements(
    n_layers: int, stages: int, min_first: int = 0, min_other: int = 1, max_first: int | None = None
) -> Iterator[tuple[int, ...]]:
    """Every valid placement, by stage-0 layers, then lexicographically."""
    for first in _first_range(n_layers, stages, min_first, min_other, max_first):
        for rest in compositions(n_layers - first, stages - 1, min_other):
            yield (first, *rest)


def count_placements(
    n_layers: int, stages: int, min_first: int = 0, min_other: int = 1, max_first: int | None = None
) -> int:
    """Number of valid placements (see the module docstring for the formula)."""
    total = 0
    for first in _first_range(n_layers, stages, min_first, min_other, max_first):
        free = n_layers - first - min_other * (stages - 1)
        total += 1 if stages == 1 else math.comb(free + stages - 2, stages - 2)
    return total


def apportion(total: int, weights: Sequence[float]) -> tuple[int, ...]:
    """Split ``total`` whole units in proportion to non-negative ``weights`` by the largest
    remainder (Hamilton) method: each part gets ``floor(total * w_i / sum(w))`` and the units
    left go to the largest fractional remainders, ties to the lower index. All-zero weights
    split evenly. The parts always sum to ``total``."""
    if total < 0 or not weights or any(w < 0 or not math.isfinite(w) for w in weights):
        raise ValueError(f"apportion needs total >= 0 and finite non-negative weights, got {total}, {list(weights)}")
    shares = [1.0] * len(weights) if sum(weights) == 0 else list(weights)
    weight_sum = float(sum(shares))
    quotas = [total * w / weight_sum for w in shares]
    parts = [math.floor(q) for q in quotas]
    left = total - sum(parts)
    order = sorted(range(len(parts)), key=lambda i: (-(quotas[i] - parts[i]), i))
    for i in order[:left]:
        parts[i] += 1
    return tuple(parts)


def skew_weights(skew: float, z: Sequence[float]) -> list[float]:
    """``exp(SKEW_RANGE * skew * (z_i - 0.5))``: all equal at skew 0."""
    return [math.exp(SKEW_RANGE * skew * (zi - 0.5)) for zi in z]


def placement_from_params(
    n_layers: int,
    stages: int,
    first: int,
    skew: float = 0.0,
    z: Sequence[float] = (),
    min_first: int = 0,
    min_other: int = 1,
    max_first: int | None = None,
) -> tuple[int, ...]:
    """The placement with ``first`` layers on stage 0 (clamped into its allowed range) and the
    rest spread over stages 1..k-1 by :func:`skew_weights` (``z`` needs k - 1 values when
    ``skew`` > 0). Always a valid placement; ValueError when none exists."""
    allowed = _first_range(n_layers, stages, min_first, min_other, max_first)
    if not allowed:
        raise ValueError(
            f"no placement of {n_layers} layers on {stages} stages (stage 0: {min_first}.."
            f"{max_first if max_first is not None else 'any'}, others >= {min_other})"
        )
    first = min(max(first, allowed.start), allowed.stop - 1)
    if stages == 1:
        return (first,)
    free = n_layers - first - min_other * (stages - 1)
    weights = skew_weights(skew, z) if skew > 0 else [1.0] * (stages - 1)
    if len(weights) != stages - 1:
        raise ValueError(f"skewed placement needs {stages - 1} stage values, got {len(weights)}")
    return (first, *(min_other + extra for extra in apportion(free, weights)))


def stage_values(free: Sequence[int], skew: float) -> list[float]:
    """The inverse of :func:`skew_weights`: z values (clipped to [0, 1]) whose weights at
    ``skew`` > 0 are proportional to each stage's ``free`` layers (a stage with none gets
    z = 0). The caller checks the placement they give; a ratio beyond ``exp(SKEW_RANGE * skew)``
    is out of reach."""
    logs = [math.log(f) for f in free if f > 0]
    top = max(logs) if logs else 0.0
    return [0.0 if f <= 0 else min(1.0, max(0.0, 1.0 + (math.log(f) - top) / (SKEW_RANGE * skew))) for f in free]


def format_placement(placement: Sequence[int]) -> str:
    """'0 4 4 4': the form Graphcore's ``--layers-per-ipu`` takes (str of the Placement type)."""
    return str(Placement(placement))
