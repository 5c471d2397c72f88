"""The pipeline placement type: decoder layers per pipeline stage, parsed once (in the config build)
from a list or a Graphcore-style string where ``NxK`` repeats N K times."""

from __future__ import annotations

from typing import Any

from dabench.core.status import ConfigError

FIELD = "parallel.placement"
_VALID = 'a list of layer counts or a string like "0 4 4 4" or "0 1x8 0x7"'


class Placement(tuple):
    """Decoder layers per pipeline stage, e.g. ``(0, 4, 4, 4)``; ``str()`` gives "0 4 4 4", the form
    Graphcore's ``--layers-per-ipu`` takes."""

    __slots__ = ()

    @classmethod
    def parse(cls, value: Any, field: str = FIELD) -> "Placement":
        """ "0 1x8 0x7" -> (0, 1 x 8, 0 x 7); a list of non-negative ints as is; else ConfigError."""
        if isinstance(value, Placement):
            return value
        if isinstance(value, str):
            layers: list[int] = []
            for token in value.replace(",", " ").split():
                count, sep, times = token.partition("x")
                if not count.isdigit() or (sep and not times.isdigit()):
                    raise ConfigError(field, value, _VALID)
                layers += [int(count)] * (int(times) if times else 1)
        elif isinstance(value, (list, tuple)):
            layers = list(value)
        else:
            raise ConfigError(field, value, _VALID)
        if not layers or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in layers):
            raise ConfigError(field, value, _VALID + " (non-negative integers, at least one stage)")
        if sum(layers) < 1:
            raise ConfigError(field, value, "must place at least one decoder layer")
        return cls(layers)

    @classmethod
    def even(cls, n_layers: int, stages: int) -> "Placement":
        """``n_layers`` split over ``stages`` as evenly as possible, the extra layers first."""
        base, rest = divmod(n_layers, stages)
        return cls(base + (1 if i < rest else 0) for i in range(stages))

    @property
    def stages(self) -> int:
        return len(self)

    @property
    def n_layers(self) -> int:
        return sum(self)

    def __str__(self) -> str:
        return " ".join(str(n) for n in self)

    def __repr__(self) -> str:
        return f"Placement({tuple(self)!r})"
