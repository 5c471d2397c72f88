"""Pipeline placements: counting, enumeration, apportionment, reachability from parameters."""

import math
import random

import pytest

from dabench.core.placement import Placement
from dabench.tune.placement import (
    apportion,
    compositions,
    count_placements,
    placement_from_params,
    placements,
    stage_values,
)


@pytest.mark.parametrize(
    "n_layers,stages,min_first,min_other,max_first",
    [
        (12, 1, 0, 1, None),
        (12, 2, 0, 1, None),
        (12, 4, 0, 1, None),
        (12, 8, 0, 1, None),
        (6, 3, 1, 1, None),
        (5, 4, 0, 2, None),
        (12, 4, 0, 1, 2),
        (12, 1, 0, 1, 2),
        (3, 5, 0, 1, None),
    ],
)
def test_enumeration_matches_count_and_is_valid(n_layers, stages, min_first, min_other, max_first):
    found = list(placements(n_layers, stages, min_first, min_other, max_first))
    assert len(found) == count_placements(n_layers, stages, min_first, min_other, max_first)
    assert len(set(found)) == len(found)
    for p in found:
        assert len(p) == stages and sum(p) == n_layers
        assert p[0] >= min_first and all(n >= min_other for n in p[1:])
        assert max_first is None or p[0] <= max_first


def test_known_counts():
    # 12 layers, IPU 0 may be empty, the others hold at least one layer: C(12, k - 1)
    assert [count_placements(12, k) for k in (1, 2, 4, 8)] == [1, 12, 220, 792]
    assert [math.comb(12, k - 1) for k in (1, 2, 4, 8)] == [1, 12, 220, 792]
    assert count_placements(3, 5) == 0 and list(placements(3, 5)) == []
    assert list(compositions(4, 2, 1)) == [(1, 3), (2, 2), (3, 1)]


@pytest.mark.parametrize(
    "total,weights",
    [(7, [1, 1, 1]), (10, [0.2, 0.5, 0.3]), (1, [0.5, 0.5]), (0, [1, 2]), (9, [0, 0, 0]), (12, [1e-9, 1, 0])],
)
def test_apportion_sums_and_is_proportional(total, weights):
    parts = apportion(total, weights)
    assert sum(parts) == total and all(p >= 0 for p in parts)
    if sum(weights) > 0:
        for part, w in zip(parts, weights, strict=False):
            assert abs(part - total * w / sum(weights)) < 1 + 1e-9


def test_apportion_rejects_negative_weights():
    with pytest.raises(ValueError, match="non-negative"):
        apportion(4, [1, -1])


def test_skew_zero_is_the_most_even_split():
    assert placement_from_params(12, 4, first=0) == (0, 4, 4, 4)
    assert placement_from_params(12, 8, first=0) == (0, 2, 2, 2, 2, 2, 1, 1)
    assert placement_from_params(12, 1, first=3) == (12,)
    assert placement_from_params(12, 4, first=11) == (9, 1, 1, 1)  # clamped: others need a layer each


def test_every_placement_is_reachable_from_parameters():
    for n_layers in (10, 16):
        for stages in (2, 3, 4, 5):
            for target in placements(n_layers, stages):
                free = [n - 1 for n in target[1:]]
                assert placement_from_params(n_layers, stages, target[0], 1.0, stage_values(free, 1.0)) == target


def test_random_parameters_always_give_valid_placements():
    rng = random.Random(0)
    for _ in range(500):
        n, k = rng.randint(1, 30), rng.choice([1, 2, 4, 8])
        if count_placements(n, k) == 0:
            with pytest.raises(ValueError, match="no placement"):
                placement_from_params(n, k, 0)
            continue
        p = placement_from_params(n, k, rng.randint(0, n), rng.random(), [rng.random() for _ in range(k - 1)])
        assert sum(p) == n and len(p) == k and all(x >= 1 for x in p[1:])


def test_format():
    assert str(Placement((0, 4, 4, 4))) == "0 4 4 4"  # Graphcore's --layers-per-ipu form
