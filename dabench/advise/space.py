"""Per-platform deployment spaces of ``dabench advise``, built from the shipped Optuna sweeps (chip
counts widened to ``max_chips``) and shaped by each platform's space.py (cuda: its own layouts). A
deployment is ``(precision, {override key: value})``. Details: docs/advise.md, "What is searched".
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator, Mapping, Sequence

from dabench.config.build import flatten
from dabench.config.compose import compose
from dabench.config.files import sweep_file
from dabench.config.schema import group_options
from dabench.core.platforms import known, preset, presets
from dabench.core.status import ConfigError
from dabench.tune.space import distribution_values, override_value, params_to_overrides, parse_overrides


def powers_of_two(limit: int) -> list[int]:
    return [2**i for i in range(0, int(math.log2(max(1, limit))) + 1)]


@dataclass
class Dim:
    """One categorical dimension: an override key and its values (Python values)."""

    key: str
    values: list[Any]


@dataclass
class PlatformSpace:
    platform: str
    groups: dict[str, str]  #: Hydra group choices besides model/hardware/precision (parallel)
    fixed: dict[str, Any]  #: key -> value set on every deployment
    precisions: list[str]
    dims: list[Dim]
    structured: Any = None  #: an object with suggest(trial) and (maybe) grid(), size()
    notes: list[str] = field(default_factory=list)

    def suggest(self, trial) -> tuple[str, dict[str, Any]]:
        precision = (
            self.precisions[0] if len(self.precisions) == 1 else trial.suggest_categorical("precision", self.precisions)
        )
        values = {
            d.key: (d.values[0] if len(d.values) == 1 else trial.suggest_categorical(d.key, d.values))
            for d in self.dims
        }
        if self.structured is not None:
            values.update(self.structured.suggest(trial))
        return precision, values

    def size(self) -> int:
        n = len(self.precisions) * math.prod(len(d.values) for d in self.dims)
        if self.structured is not None:
            n *= self.structured.size()
        return n

    def grid(self) -> Iterator[tuple[str, dict[str, Any]]]:
        structured = list(self.structured.grid()) if self.structured is not None else [{}]
        combos = itertools.product(self.precisions, itertools.product(*(d.values for d in self.dims)), structured)
        for precision, combo, extra in combos:
            yield precision, {**dict(zip((d.key for d in self.dims), combo, strict=True)), **extra}


def _sweep_groups(sweep: Mapping[str, Any]) -> dict[str, str]:
    """``override /group: choice`` entries of a sweep's defaults list (but model, hardware and the
    sweeper, which advise sets itself)."""
    return {
        key.split("/", 1)[1]: str(value)
        for entry in sweep.get("defaults") or []
        if isinstance(entry, Mapping)
        for key, value in entry.items()
        if key.startswith("override /")
        and "@" not in key
        and value is not None
        and key.split("/", 1)[1] not in ("hardware", "hydra/sweeper", "model")
    }


def _sweep_dims(sweep: Mapping[str, Any]) -> tuple[list[str], list[Dim]]:
    """(precision choices, the other categorical dimensions) of ``hydra.sweeper.params``."""
    params = ((sweep.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    values = {
        dim.key: [dim.to_value(v) for v in distribution_values(dim.distribution, dim.key)]
        for dim in parse_overrides(params_to_overrides(params)).dimensions
    }
    return [str(v) for v in values.pop("precision", [])], [Dim(key, choices) for key, choices in values.items()]


def build_space(platform: str, model: Mapping[str, Any], max_chips: int = 16) -> PlatformSpace:
    """The deployment space of ``platform`` for the composed ``model`` section: its shipped sweep's,
    shaped by its platform record's ``space`` (dabench/platforms/<family>/space.py)."""

    record = preset(platform) if platform in presets() else known(platform, "platforms")
    sweep = sweep_file(record.sweep) if record.sweep else {}
    groups = _sweep_groups(sweep)
    default_precision = groups.pop("precision", None)
    fixed = flatten({section: sweep.get(section) or {} for section in ("hardware", "parallel")})
    fixed.pop("hardware.mode", None)
    precisions, dims = _sweep_dims(sweep)
    if not precisions and default_precision:
        precisions = [default_precision]
    notes = [f"from sweeps/{record.sweep}.yaml"] if sweep else []
    space = PlatformSpace(platform, groups, fixed, precisions or ["fp32"], dims, None, notes)
    if record.space:
        sweeper = (sweep.get("hydra") or {}).get("sweeper") or {}
        hook_args = dict((sweeper.get("space") or {}).get("args") or {})
        space = record.space(space, hook_args, {"model": dict(model)}, powers_of_two(max_chips))
    return space


def overrides_of(
    space: PlatformSpace,
    model_overrides: Sequence[str],
    precision: str,
    values: Mapping[str, Any],
    mode: str = "predict",
) -> list[str]:
    """The ``python -m dabench`` overrides of one deployment (groups first)."""

    return [
        *model_overrides,
        f"hardware={space.platform}",
        f"hardware.mode={mode}",
        *(f"{group}={choice}" for group, choice in space.groups.items()),
        f"precision={precision}",
        *(f"{key}={override_value(value)}" for key, value in {**space.fixed, **values}.items()),
    ]


@lru_cache(maxsize=None)
def _precision_section(name: str) -> dict:
    try:
        return compose([f"precision={name}"])["precision"]
    except Exception:
        raise ConfigError("precision", name, f"one of {', '.join(group_options('precision'))}") from None


def precision_section(name: str) -> dict:
    """The composed ``precision`` section of ``precision=<name>`` (a fresh dict)."""
    return copy.deepcopy(_precision_section(name))
