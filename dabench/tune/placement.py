"""Pipeline placements: compositions of ``n_layers`` decoder layers over ``stages`` stages, first
stage first (``(0, 4, 4, 4)``), stage 0 within ``min_first`` .. ``max_first``, every other stage at
least ``min_other``; their count, enumeration and a searchable form (stage-0 layers, a skew and one
value per other stage). Pure functions. Derivation: docs/tuning.md, "IPU placements".
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Iterator, Sequence

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
    free = n_layers - min_other * (stages - 1)  # layers free to spread when stage 0 has none
    return sum(
        1 if stages == 1 else math.comb(free - first + stages - 2, stages - 2)
        for first in _first_range(n_layers, stages, min_first, min_other, max_first)
    )


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
    for i in sorted(range(len(parts)), key=lambda i: (-(quotas[i] - parts[i]), i))[:left]:
        parts[i] += 1
    return tuple(parts)


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
    rest spread over stages 1..k-1 by weights ``exp(SKEW_RANGE * skew * (z_i - 0.5))`` (``z`` needs k - 1 values when
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
    weights = [math.exp(SKEW_RANGE * skew * (zi - 0.5)) for zi in z] if skew > 0 else [1.0] * (stages - 1)
    if len(weights) != stages - 1:
        raise ValueError(f"skewed placement needs {stages - 1} stage values, got {len(weights)}")
    return (first, *(min_other + extra for extra in apportion(free, weights)))


def stage_values(free: Sequence[int], skew: float) -> list[float]:
    """The inverse of the skew weights: z values (clipped to [0, 1]) whose weights at
    ``skew`` > 0 are proportional to each stage's ``free`` layers (a stage with none gets
    z = 0). The caller checks the placement they give; a ratio beyond ``exp(SKEW_RANGE * skew)``
    is out of reach."""
    logs = [math.log(f) for f in free if f > 0]
    top = max(logs) if logs else 0.0
    return [0.0 if f <= 0 else min(1.0, max(0.0, 1.0 + (math.log(f) - top) / (SKEW_RANGE * skew))) for f in free]
