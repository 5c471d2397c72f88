"""Which platforms and precisions advise searches: every preset but cpu by default, fp8 exactly
where the chip lists it, the IPU's even placements enumerable. All in-process, nothing predicted."""

import pytest

from dabench.advise.run import Request, evaluator, model_section
from dabench.config.compose import compose
from dabench.core.platforms import presets


def test_default_platforms_are_every_preset_but_cpu():
    assert Request("gpt2_xl", 1e9).platforms == [p for p in presets() if p != "cpu"]
    assert {"b200", "mi300x", "cuda_a100", "wse3", "sn40l", "gaudi3"} <= set(Request("gpt2_xl", 1e9).platforms)


@pytest.mark.parametrize("platform", ["cuda", "cuda_h100", "cuda_a100", "b200", "mi300x", "gaudi2", "wse2", "rdu"])
def test_fp8_searched_exactly_where_the_chip_lists_it(platform):
    listed = compose([f"hardware={platform}"])["hardware"]["precisions"]
    space = evaluator(platform, model_section(Request("tiny", 1e9)), 4).space
    assert ("fp8" in space.precisions) == ("fp8" in listed)
    assert set(space.precisions) <= set(listed)


def test_ipu_space_enumerates_its_even_placements():
    space = evaluator("ipu", model_section(Request("gpt2_xl", 1e9)), 4).space
    grid = list(space.structured.grid())
    assert len(grid) == space.structured.size() and len(grid) < 1000
    for deployment in grid:  # even over IPUs 1..k-1: their layer counts differ by at most one
        rest = deployment["parallel.layers_per_stage"][1:]
        assert not rest or max(rest) - min(rest) <= 1
