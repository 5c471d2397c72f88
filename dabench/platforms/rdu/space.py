"""The SambaNova RDU deployment space: chips, then a tensor-parallel degree dividing them and the
heads (the ``rdu_deploy`` sweep's hook, and advise's shaping of it)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dabench.advise.space import PlatformSpace
from dabench.core.status import ConfigError
from dabench.tune.choice_tree import ChoiceTreeSpace


def rdu_chips_space(
    config: Mapping[str, Any], chips: Sequence[int] = (1, 2, 4, 8), tensor_parallel: Sequence[int] = (1, 2, 4, 8)
) -> ChoiceTreeSpace:
    heads = int(config["model"]["n_heads"])
    branches = {
        n: [t for t in sorted(set(tensor_parallel)) if n % t == 0 and heads % t == 0] for n in sorted(set(chips))
    }
    if not any(branches.values()):
        raise ConfigError(
            "hydra.sweeper.space.args.tensor_parallel",
            list(tensor_parallel),
            f"degrees dividing some chip count in {list(chips)} and model.n_heads={heads}",
        )
    return ChoiceTreeSpace(
        "chips",
        "tensor_parallel",
        branches,
        lambda n: f"chips{n}",
        lambda n, t: {"parallel.degree": t, "parallel.replicas": n // t},
    )


def advise_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    space.structured = rdu_chips_space(config, **{**args, "chips": chips})
    return space
