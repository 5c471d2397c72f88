"""Search spaces written in Hydra's override grammar (``hydra.sweeper.params`` and command-line
sweeps), turned into Optuna distributions; list or dict choices are stored as their override text.
The translation table: docs/tuning.md, "Search space syntax".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from dabench.core.status import ConfigError

_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-./]*$")
_KEYWORDS = {"true", "false", "null", "nan", "inf"}


def override_value(value: Any) -> str:
    """Python value -> text in Hydra's override grammar (lists, dicts, quoted strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # shortest round trip; nan, inf and -inf as Hydra's grammar writes them
    if isinstance(value, str):
        if _BARE.match(value) and value.lower() not in _KEYWORDS:
            return value
        # Hydra reads a backslash literally unless it runs up to a quote: only those are doubled
        return "'" + re.sub(r"(\\+)(?='|$)", r"\1\1", value).replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{override_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r} ({type(value).__name__}) as a Hydra override value")


def _choice_value(value: Any) -> Any:
    """Optuna categorical choices must be None, bool, int, float or str."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return override_value(value)


@dataclass(frozen=True)
class SearchDimension:
    """One searched key: ``key`` as written in the override (may carry ``+``), ``name`` the Optuna
    parameter name (the key without ``+``/``++``), ``distribution`` what Optuna samples."""

    key: str
    name: str
    distribution: BaseDistribution
    originals: tuple | None = None  #: categorical: the choices as written, when Optuna stores text

    def to_value(self, sampled: Any) -> Any:
        """The override value for a sampled parameter (decodes list/dict choices)."""
        if self.originals is not None:
            return self.originals[self.distribution.choices.index(sampled)]
        return sampled


@dataclass(frozen=True)
class ParsedSpace:
    dimensions: tuple[SearchDimension, ...]
    fixed: tuple[str, ...]  #: overrides passed unchanged to every trial

    def suggest(self, trial) -> dict[str, Any]:
        """Sample every dimension on ``trial``: {override key: value}."""
        values = {}
        for dim in self.dimensions:
            d = dim.distribution
            if isinstance(d, CategoricalDistribution):
                values[dim.key] = dim.to_value(trial.suggest_categorical(dim.name, d.choices))
            elif isinstance(d, IntDistribution):
                values[dim.key] = trial.suggest_int(dim.name, d.low, d.high, step=d.step, log=d.log)
            else:
                values[dim.key] = trial.suggest_float(dim.name, d.low, d.high, step=d.step, log=d.log)
        return values


def distribution_values(distribution: BaseDistribution, key: str = "?") -> list[Any]:
    """All values of a discrete distribution."""
    d = distribution
    if isinstance(d, CategoricalDistribution):
        return list(d.choices)
    if isinstance(d, IntDistribution):
        return list(range(d.low, d.high + 1, 1 if d.log else d.step))
    if isinstance(d, FloatDistribution) and d.step is not None:
        n = int(round((d.high - d.low) / d.step))
        return [d.low + i * d.step for i in range(n + 1)]
    raise ValueError(f"{key}: a continuous distribution has no grid")


def _range_distribution(key: str, sweep) -> BaseDistribution:
    start, stop, step = sweep.start, sweep.stop, sweep.step
    values = [start + i * step for i in range(max(0, math.ceil((stop - start) / step)))]
    if not values:
        raise ConfigError(key, f"range({start}, {stop}, {step})", "an empty range; Hydra ranges exclude the stop value")
    if sweep.shuffle:
        return CategoricalDistribution(values)
    log = "log" in sweep.tags
    is_int = all(isinstance(v, int) for v in (start, stop, step)) or "int" in sweep.tags
    if log and step != 1:
        raise ConfigError(
            key,
            f"tag(log, range({start}, {stop}, {step}))",
            "log scale needs step 1 (Optuna cannot combine log and step)",
        )
    if is_int:
        return IntDistribution(int(start), int(values[-1]), step=1 if log else int(step), log=log)
    return FloatDistribution(float(start), float(values[-1]), step=None if log else float(step), log=log)


def _interval_distribution(key: str, sweep) -> BaseDistribution:
    if sweep.start > sweep.end:
        raise ConfigError(key, f"interval({sweep.start}, {sweep.end})", "an interval with low <= high")
    log = "log" in sweep.tags
    if log and sweep.start <= 0:
        raise ConfigError(key, f"interval({sweep.start}, {sweep.end})", "log scale needs a positive lower bound")
    if (isinstance(sweep.start, int) and isinstance(sweep.end, int)) or "int" in sweep.tags:
        return IntDistribution(int(sweep.start), int(sweep.end), log=log)
    return FloatDistribution(float(sweep.start), float(sweep.end), log=log)


def parse_overrides(overrides: Sequence[str]) -> ParsedSpace:
    """Split override strings (``key=value``) into search dimensions and fixed overrides."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep

    parser = OverridesParser.create()
    dims: list[SearchDimension] = []
    fixed: list[str] = []
    for text in overrides:
        override = parser.parse_override(text)
        if not override.is_sweep_override():
            fixed.append(text)
            continue
        key = override.get_key_element()
        name = override.key_or_group if override.package is None else f"{override.key_or_group}@{override.package}"
        sweep = override.value()
        originals = None
        if isinstance(sweep, ChoiceSweep):
            dist: BaseDistribution = CategoricalDistribution([_choice_value(v) for v in sweep.list])
            originals = tuple(sweep.list) if any(_choice_value(v) is not v for v in sweep.list) else None
        elif isinstance(sweep, RangeSweep):
            dist = _range_distribution(key, sweep)
        elif isinstance(sweep, IntervalSweep):
            dist = _interval_distribution(key, sweep)
        else:  # pragma: no cover - the grammar has no other sweep kinds
            raise ConfigError(key, text, "choice(...), range(...) or interval(...)")
        dims.append(SearchDimension(key=key, name=name, distribution=dist, originals=originals))
    twice = [name for name, n in Counter(d.name for d in dims).items() if n > 1]
    if twice:
        raise ConfigError("hydra.sweeper.params", twice[0], "each key may be searched once (it is listed twice)")
    return ParsedSpace(dimensions=tuple(dims), fixed=tuple(fixed))


def params_to_overrides(params: Mapping[str, Any] | None) -> list[str]:
    """``hydra.sweeper.params`` ({key: override value text}) -> override strings."""
    return [
        f"{key}={value if isinstance(value, str) else override_value(value)}" for key, value in (params or {}).items()
    ]
