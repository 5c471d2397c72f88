"""The Placement type: layers per pipeline stage, parsed once ("0 4 4 4", "0 1x8 0x7" or a list)."""

import pytest

from dabench.core.placement import Placement
from dabench.core.status import ConfigError


@pytest.mark.parametrize(
    "text,layers",
    [
        ("0 4 4 4", (0, 4, 4, 4)),
        ("0 1x8 0x7", (0,) + (1,) * 8 + (0,) * 7),
        ("0 2 1x14", (0, 2) + (1,) * 14),
        ([0, 3, 3], (0, 3, 3)),
    ],
)
def test_parse(text, layers):
    assert Placement.parse(text) == layers


def test_format_and_counts():
    p = Placement.parse("0 1x3 2")
    assert p == (0, 1, 1, 1, 2) and p.stages == 5 and p.n_layers == 5 and str(p) == "0 1 1 1 2"
    assert Placement.even(7, 3) == (3, 2, 2)


@pytest.mark.parametrize("bad", ["0 four", "0 -1", "", "0 0", "1x", [0, -2], 7, "0 a"])
def test_bad_placements_are_refused_naming_the_field(bad):
    with pytest.raises(ConfigError) as info:
        Placement.parse(bad)
    assert info.value.field == "parallel.placement"
