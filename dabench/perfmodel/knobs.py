"""Typed hardware knobs: one frozen dataclass per architecture, built from ``hardware.options``.

``knobs_for(rc.hardware)`` -> the arch's validated, cached knob dataclass (its platform record's
``options``: dabench/platforms/<family>/knobs.py); every knob must be in the YAML, and an unknown,
missing or invalid one is a ConfigError naming ``hardware.options.<name>``. Keys starting with
``runner_`` go to the vendor runners. Docs: docs/perfmodel.md, "Knobs, sources and calibration".
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from dabench.core.platforms import platform
from dabench.core.status import ConfigError
from dabench.perfmodel.constants import fitted_options

T = TypeVar("T")

#: option keys with this prefix belong to the vendor runners, not to the analytical models
RUNNER_PREFIX = "runner_"
#: the upper bound of a numeric knob that declares none: no quantity these models take (FLOP/s,
#: bytes, B/s, seconds, counts) comes near it, and sums and products of such values stay finite
MAX_KNOB = 1e21


@dataclass(frozen=True)
class KnobSpec:
    """Validation rules of one knob (stored in the dataclass field's metadata)."""

    low: float | None = None  #: exclusive lower bound for numbers
    high: float | None = None  #: inclusive upper bound for numbers
    integer: bool = False
    boolean: bool = False
    choices: tuple[str, ...] = ()  #: allowed strings (alone: a string knob; with low/high: number or string)
    doc: str = ""

    @property
    def numeric(self) -> bool:
        return self.low is not None or self.high is not None or self.integer

    @property
    def top(self) -> float:
        """The inclusive upper bound in force: ``high``, else :data:`MAX_KNOB`."""
        return self.high if self.high is not None else MAX_KNOB

    def describe(self) -> str:
        parts = []
        if self.boolean:
            return "true or false"
        if self.numeric:
            kind = "an integer" if self.integer else "a number"
            bounds = (f" above {self.low:g} and" if self.low is not None else "") + f" at most {self.top:g}"
            parts.append(kind + bounds)
        if self.choices:
            parts.append("one of " + ", ".join(self.choices))
        return " or ".join(parts) or "any value"

    def check(self, name: str, value: Any) -> Any:
        """``value`` converted to the knob's type, or ConfigError naming ``hardware.options.<name>``."""
        if self.boolean:
            if isinstance(value, bool):
                return value
            raise ConfigError(f"hardware.options.{name}", value, self.describe())
        if self.choices and isinstance(value, str) and value in self.choices:
            return value
        if self.numeric and isinstance(value, str):  # "2.75e16": YAML 1.1 reads it as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if self.numeric and isinstance(value, (int, float)) and not isinstance(value, bool):
            ok = (
                math.isfinite(value)
                and (self.low is None or value > self.low)
                and value <= self.top
                and (not self.integer or int(value) == value)
            )
            if ok:
                return int(value) if self.integer else float(value)
        raise ConfigError(f"hardware.options.{name}", value, f"must be {self.describe()}")


def knob(
    *,
    low: float | None = None,
    high: float | None = None,
    integer: bool = False,
    boolean: bool = False,
    choices: tuple[str, ...] = (),
    doc: str = "",
) -> Any:
    """A required dataclass field carrying its :class:`KnobSpec` (no default: the YAML holds it)."""
    if integer and low is None:
        low = 0
    return field(metadata={"knob": KnobSpec(low, high, integer, boolean, tuple(choices), doc)})


def knob_specs(cls: type) -> dict[str, KnobSpec]:
    """name -> KnobSpec of a knob dataclass, in declaration order."""
    return {f.name: f.metadata.get("knob", KnobSpec()) for f in dataclasses.fields(cls)}


def _unknown(arch: str, key: str, valid: list[str]) -> ConfigError:
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return ConfigError(
        f"hardware.options.{key}",
        key,
        f"unknown knob for {arch}; {hint}valid knobs: {', '.join(valid)} "
        f"(keys starting with {RUNNER_PREFIX!r} go to the vendor runner)",
    )


def build_knobs(arch: str, options: Mapping[str, Any], cls: type[T] | None = None) -> T:
    """The knob dataclass of ``arch`` from a ``hardware.options`` mapping; ConfigError on an
    unknown, missing or invalid knob."""
    options_of = platform(arch).options
    cls = cls or (options_of() if options_of else None)
    if cls is None:
        raise ConfigError("hardware.arch", arch, "a platform with knobs (dabench/platforms/, docs/platforms.md)")
    specs = knob_specs(cls)
    for key in options:
        if key not in specs and not str(key).startswith(RUNNER_PREFIX):
            raise _unknown(arch, str(key), list(specs))
    missing = [name for name in specs if name not in options]
    if missing:
        raise ConfigError(
            f"hardware.options.{missing[0]}",
            None,
            f"required knob of {arch} is missing (set it in conf/hardware/{arch}.yaml's options)",
        )
    return cls(**{name: spec.check(name, options[name]) for name, spec in specs.items()})


_CACHE: dict[tuple[str, int, str], tuple[Mapping[str, Any], Any]] = {}


def knobs_for(hardware: Any, cls: type[T] | None = None) -> T:
    """:func:`build_knobs` for a HardwareSpec, cached by the identity of its (frozen) options."""
    options = hardware.options
    constants = getattr(hardware, "constants", "published")
    key = (hardware.arch, id(options), constants)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is options:
        return hit[1]
    merged = options
    if constants != "published":  # hardware.constants=NAME|FILE: the set's fitted options over the YAML's
        try:
            merged = {**options, **fitted_options(constants, hardware.arch)}
        except (OSError, ValueError) as error:
            raise ConfigError("hardware.constants", constants, str(error)) from None
    built = build_knobs(hardware.arch, merged, cls)
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = (options, built)  # holding the mapping keeps its id from being reused
    return built
