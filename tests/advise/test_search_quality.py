"""The search finds (within 1%) the exhaustive best of an enumerable deployment space (>= 500
deployments) while evaluating at most 20% of it (benchmarks/advise_quality.py: larger spaces).
cuda_a100's is memory-tight: its best needs two plain values changed at once. All numbers
PREDICTED (in-process, cached)."""

import copy

import pytest

from dabench.advise.run import Request, _platform_base, model_section
from dabench.advise.search import Evaluator, score, search
from dabench.advise.space import build_space

CHIPS = 4  #: up to 4 GPUs: every layout kind (tp, pp, dp, fsdp, micro-batches, recompute) in ~3,900 deployments


def exhaustive(space, predict, objective):
    """The best of every deployment of the enumerable ``space``."""
    scored = [(score(ev, objective, 700.0, None), ev) for ev in (predict(p, v) for p, v in space.grid())]
    return max(((s, ev) for s, ev in scored if s is not None), key=lambda item: item[0])[1]


@pytest.fixture(scope="module", params=["cuda", "cuda_a100"])
def cuda_llama(request):
    model = model_section(Request(model="llama_7b", tokens=1e9))
    space = build_space(request.param, model, CHIPS)
    base = copy.deepcopy(_platform_base(request.param, space.groups))
    base["model"] = model
    full = Evaluator(space, base, CHIPS)
    return space, base, full, exhaustive(space, full, "time")


def test_space_is_enumerable_and_large_enough(cuda_llama):
    space, _, full, _ = cuda_llama
    assert space.size() >= 500 and sum(1 for _ in space.grid()) == space.size()
    evaluations = list(full.cache.values())
    assert sum(e.ok for e in evaluations) > 0 and any(not e.ok for e in evaluations)


@pytest.mark.parametrize("objective", ["time", "energy"])
def test_search_within_1pct_evaluating_at_most_20pct(cuda_llama, objective):
    space, base, full, _ = cuda_llama
    full_best = exhaustive(space, full, objective)
    predictor = Evaluator(space, base, CHIPS)
    found = search(space, predictor, objective, 3, watts_per_chip=700.0)
    evaluated = len(predictor.cache)
    assert evaluated <= 0.2 * space.size()
    assert found is not None
    gap = 1 - score(found, objective, 700.0, None) / score(full_best, objective, 700.0, None)
    print(f"space {space.size()}, evaluated {evaluated} ({evaluated / space.size():.1%}), gap {gap:.2%}")
    assert gap <= 0.01
