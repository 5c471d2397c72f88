"""The Cerebras WSE-2 deployment space: execution mode, then replicas (pipelined) or CS-2 systems
(weight streaming); the ``wse2_deploy`` sweep's hook, and advise's shaping of it."""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from dabench.advise.space import PlatformSpace
from dabench.core.status import ConfigError
from dabench.tune.choice_tree import ChoiceTreeSpace


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


class WeightStreamingSystems:
    """The WSE-2 execution-mode hook (``wse2_execution_space``) plus the number of CS-2 systems,
    sampled only under weight streaming (``systems.weight_streaming``)."""

    def __init__(self, inner, systems: Sequence[int]):
        self.inner, self.systems = inner, list(systems)

    def suggest(self, trial) -> dict[str, Any]:
        values = self.inner.suggest(trial)
        systems = 1
        if values["hardware.options.execution_mode"] == "weight_streaming" and len(self.systems) > 1:
            systems = trial.suggest_categorical("systems.weight_streaming", self.systems)
        return {**values, "parallel.degree": systems}

    def size(self) -> int:
        return sum(len(self.systems) if m == "weight_streaming" else len(r) for m, r in self.inner.branches.items())

    def grid(self) -> Iterator[dict[str, Any]]:
        for values in self.inner.grid():
            streaming = values["hardware.options.execution_mode"] == "weight_streaming"
            for systems in self.systems if streaming else [1]:
                yield {**values, "parallel.degree": systems}


def advise_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    space.groups["parallel"] = "dp"
    space.structured = WeightStreamingSystems(wse2_execution_space(config, **args), chips)
    space.notes.append("CS-2 systems (data parallel) under weight streaming")
    return space
