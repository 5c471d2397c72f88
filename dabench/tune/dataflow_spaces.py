"""Structured-space hooks of the SambaNova RDU and Cerebras WSE-2 deployment sweeps: a first
categorical, then one dependent categorical per its value (docs/tuning.md, "The sweeps")."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

from dabench.core.status import ConfigError


class ChoiceTreeSpace:
    """A first categorical (``name`` over ``branches``), then one dependent categorical per
    branch value (``<dependent>.<label(value)>`` over ``branches[value]``); ``build(first,
    second)`` gives the overrides."""

    def __init__(
        self,
        name: str,
        dependent: str,
        branches: Mapping[Any, Sequence[Any]],
        label: Callable[[Any], str],
        build: Callable[[Any, Any], dict[str, Any]],
    ):
        self.name, self.dependent, self.label, self.build = name, dependent, label, build
        self.branches = {k: list(v) for k, v in branches.items() if v}

    def suggest(self, trial) -> dict[str, Any]:
        first = trial.suggest_categorical(self.name, list(self.branches))
        options = self.branches[first]
        second = (
            options[0]
            if len(options) == 1
            else trial.suggest_categorical(f"{self.dependent}.{self.label(first)}", options)
        )
        return self.build(first, second)

    def size(self) -> int:
        return sum(len(v) for v in self.branches.values())

    def grid(self) -> Iterator[dict[str, Any]]:
        for first, options in self.branches.items():
            for second in options:
                yield self.build(first, second)


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


def wse2_execution_space(
    config: Mapping[str, Any],
    execution_modes: Sequence[str] = ("pipelined", "weight_streaming"),
    replicas: Sequence[int] = (1, 2, 4, 8),
) -> ChoiceTreeSpace:
    known = ("pipelined", "weight_streaming")
    if not execution_modes or any(m not in known for m in execution_modes):
        raise ConfigError(
            "hydra.sweeper.space.args.execution_modes", list(execution_modes), f"among {', '.join(known)}"
        )
    branches = {m: (list(replicas) if m == "pipelined" else [1]) for m in execution_modes}
    return ChoiceTreeSpace(
        "execution_mode",
        "replicas",
        branches,
        str,
        lambda m, r: {"hardware.options.execution_mode": m, "hardware.options.replicas": r},
    )
