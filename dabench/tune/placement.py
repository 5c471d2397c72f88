"""Pipeline placements: how ``n_layers`` decoder layers are split over ``stages`` pipeline stages.

A placement is a composition of ``n_layers`` into ``stages`` parts, written first stage first,
e.g. ``(0, 4, 4, 4)`` for 12 layers on 4 IPUs. Stage 0 may be given a smaller minimum than the
others because it also holds the embedding (and, on Graphcore's GPT-2 layout, the LM head):
Graphcore's scripts always put 0 layers on IPU 0 (DABench-LLM artifact, paper-notes section 5.1).

All functions here are pure. The counting formula: with minimums ``m_0`` (stage 0) and ``m``
(other stages), the placements number ``C(R + stages - 1, stages - 1)`` where
``R = n_layers - m_0 - m * (stages - 1)`` layers are free to place (stars and bars).
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Iterator, Sequence


def minimums(stages: int, min_first: int, min_other: int) -> tuple[int, ...]:
    """Per-stage minimum layer counts."""
    return (min_first,) + (min_other,) * (stages - 1)


def count_placements(n_layers: int, stages: int, min_first: int = 0, min_other: int = 1) -> int:
    """Number of valid placements (see the module docstring for the formula)."""
    free = n_layers - sum(minimums(stages, min_first, min_other))
    if stages < 1 or free < 0:
        return 0
    return math.comb(free + stages - 1, stages - 1)


def placements(n_layers: int, stages: int, min_first: int = 0, min_other: int = 1) -> Iterator[tuple[int, ...]]:
    """Every valid placement, in lexicographic order of the bar positions."""
    mins = minimums(stages, min_first, min_other)
    free = n_layers - sum(mins)
    if stages < 1 or free < 0:
        return
    slots = free + stages - 1
    for bars in combinations(range(slots), stages - 1):
        edges = (-1, *bars, slots)
        yield tuple(mins[i] + edges[i + 1] - edges[i] - 1 for i in range(stages))


def apportion(total: int, weights: Sequence[float]) -> tuple[int, ...]:
    """Split ``total`` whole units in proportion to non-negative ``weights`` by the largest
    remainder (Hamilton) method: each part gets ``floor(total * w_i / sum(w))`` and the units
    left go to the largest fractional remainders, ties to the lower index. All-zero weights
    split evenly. The parts always sum to ``total``."""
    if total < 0 or any(w < 0 or not math.isfinite(w) for w in weights) or not weights:
        raise ValueError(f"apportion needs total >= 0 and finite non-negative weights, got {total}, {list(weights)}")
    weight_sum = float(sum(weights))
    shares = [1.0] * len(weights) if weight_sum == 0 else list(weights)
    weight_sum = float(sum(shares))
    quotas = [total * w / weight_sum for w in shares]
    parts = [math.floor(q) for q in quotas]
    left = total - sum(parts)
    order = sorted(range(len(parts)), key=lambda i: (-(quotas[i] - parts[i]), i))
    for i in order[:left]:
        parts[i] += 1
    return tuple(parts)


def placement_from_weights(n_layers: int, weights: Sequence[float], min_first: int = 0,
                           min_other: int = 1) -> tuple[int, ...]:
    """The placement whose free layers (beyond each stage's minimum) are apportioned by
    ``weights`` (one weight per stage). Every valid placement is reachable: weights equal to its
    free layers per stage give it back exactly, and so does an open set of weights around them."""
    mins = minimums(len(weights), min_first, min_other)
    free = n_layers - sum(mins)
    if free < 0:
        raise ValueError(f"{n_layers} layers cannot fill {len(weights)} stages with minimums {list(mins)}")
    return tuple(m + extra for m, extra in zip(mins, apportion(free, weights)))


def format_placement(placement: Sequence[int]) -> str:
    """'0 4 4 4': the form Graphcore's ``--layers-per-ipu`` takes."""
    return " ".join(str(n) for n in placement)
