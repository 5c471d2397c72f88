"""Pipeline placements: counting, enumeration, apportionment, reachability from weights."""

import math

import pytest

from dabench.tune.placement import (
    apportion,
    count_placements,
    format_placement,
    placement_from_weights,
    placements,
)


@pytest.mark.parametrize("n_layers,stages,min_first,min_other", [(12, 1, 0, 1), (12, 2, 0, 1), (12, 4, 0, 1),
                                                                  (12, 8, 0, 1), (6, 3, 1, 1), (5, 4, 0, 2)])
def test_enumeration_matches_count_and_is_valid(n_layers, stages, min_first, min_other):
    found = list(placements(n_layers, stages, min_first, min_other))
    assert len(found) == count_placements(n_layers, stages, min_first, min_other)
    assert len(set(found)) == len(found)
    for p in found:
        assert len(p) == stages and sum(p) == n_layers
        assert p[0] >= min_first and all(n >= min_other for n in p[1:])


def test_known_counts():
    # 12 layers, stage 0 may be empty, others hold at least one layer: C(12, k - 1)
    assert [count_placements(12, k) for k in (1, 2, 4, 8)] == [1, 12, 220, 792]
    assert count_placements(3, 5) == 0 and list(placements(3, 5)) == []


@pytest.mark.parametrize("total,weights", [(7, [1, 1, 1]), (10, [0.2, 0.5, 0.3]), (1, [0.5, 0.5]),
                                           (0, [1, 2]), (9, [0, 0, 0]), (12, [1e-9, 1, 0])])
def test_apportion_sums_and_is_proportional(total, weights):
    parts = apportion(total, weights)
    assert sum(parts) == total and all(p >= 0 for p in parts)
    if sum(weights) > 0:
        for part, w in zip(parts, weights):
            assert abs(part - total * w / sum(weights)) < 1 + 1e-9


def test_apportion_rejects_negative_weights():
    with pytest.raises(ValueError, match="non-negative"):
        apportion(4, [1, -1])


def test_every_placement_is_reachable_from_weights():
    for stages in (2, 3, 4):
        for target in placements(8, stages):
            free = [target[0]] + [n - 1 for n in target[1:]]
            assert placement_from_weights(8, free) == target
            # and from a nearby, non-proportional weight vector
            nudged = [f + 0.01 * (i + 1) for i, f in enumerate(free)]
            assert placement_from_weights(8, nudged) == target


def test_format():
    assert format_placement((0, 4, 4, 4)) == "0 4 4 4"
    assert math.comb(11, 3) == count_placements(12, 4, min_first=1)
