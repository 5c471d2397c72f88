"""A choice tree: a first categorical, then one dependent categorical per its value, the shape of
the RDU, WSE-2 and GPU deployment spaces (docs/tuning.md, "The sweeps")."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence


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
