"""The pipeline placement type: decoder layers per pipeline stage, parsed once (in the config build)
from a list or a Graphcore-style string where ``NxK`` repeats N K times."""

from __future__ import annotations

from typing import Any

from dabench.core.status import ConfigError

FIELD = "parallel.placement"
#: at most this many stages (parallel.degree's bound) and layers per stage, checked before expanding
MAX_STAGES, MAX_LAYERS = 4096, 10_000
_VALID = 'a list of layer counts or a string like "0 4 4 4" or "0 1x8 0x7"'
_BOUNDED = f"must be {_VALID} or null (at most {MAX_STAGES} stages of at most {MAX_LAYERS} layers)"


def _small(text: str) -> bool:
    """ASCII digits, at most 6 of them."""
    return text.isascii() and text.isdigit() and len(text) <= 6


class Placement(tuple):
    """Decoder layers per pipeline stage, e.g. ``(0, 4, 4, 4)``; ``str()`` gives "0 4 4 4", the form
    Graphcore's ``--layers-per-ipu`` takes."""

    __slots__ = ()

    @classmethod
    def parse(cls, value: Any, field: str = FIELD) -> "Placement":
        """ "0 1x8 0x7" -> (0, 1 x 8, 0 x 7); a list of non-negative ints as is; else ConfigError.
        Bounded (:data:`MAX_STAGES`, :data:`MAX_LAYERS`) before a string is expanded."""
        if isinstance(value, Placement):
            return value
        if isinstance(value, str):
            layers: list[int] = []
            for token in value.replace(",", " ").split():
                count, sep, times = token.partition("x")
                if (
                    not _small(count)
                    or (sep and not _small(times))
                    or int(count) > MAX_LAYERS
                    or len(layers) + int(times or 1) > MAX_STAGES
                ):
                    raise ConfigError(field, value, _BOUNDED)
                layers += [int(count)] * int(times or 1)
        elif isinstance(value, (list, tuple)) and len(value) <= MAX_STAGES:
            layers = list(value)
        else:
            raise ConfigError(field, value, _BOUNDED)
        if not layers or any(isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_LAYERS for n in layers):
            raise ConfigError(field, value, _BOUNDED + " (non-negative integers, at least one stage)")
        if not 1 <= sum(layers) <= MAX_LAYERS:
            raise ConfigError(field, value, f"must place 1 to {MAX_LAYERS} decoder layers (model.n_layers' bound)")
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
