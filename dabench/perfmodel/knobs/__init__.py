"""Typed hardware knobs: one frozen dataclass per architecture, built from ``hardware.options``;
each knob a field with its :class:`~dabench.config.fields.Spec` (:func:`knob`), checked as config
fields are.

``knobs_for(rc.hardware)`` -> the arch's validated, cached knob dataclass (its platform record's
``options``: dabench/platforms/<family>/knobs.py); every knob must be in the YAML, and an unknown,
missing or invalid one is a ConfigError naming ``hardware.options.<name>``. Keys starting with
``runner_`` go to the vendor runners. Docs: docs/perfmodel.md, "Knobs, sources and calibration".
"""

from __future__ import annotations

import contextlib
from typing import Any, Mapping

from dabench.config.check import check_value, refuse, suggest
from dabench.config.fields import BOOL, CHOICE, INT, NUMBER, Spec, field_, specs
from dabench.core.platforms import platform
from dabench.core.status import ConfigError
from dabench.perfmodel.constants import fitted_options

#: option keys with this prefix belong to the vendor runners, not to the analytical models
RUNNER_PREFIX = "runner_"
#: the upper bound of a numeric knob that declares none: no quantity these models take (FLOP/s,
#: bytes, B/s, seconds, counts) comes near it, and sums and products of such values stay finite
MAX_KNOB = 1e21


def knob(
    *,
    low: float | None = None,
    high: float | None = None,
    integer: bool = False,
    boolean: bool = False,
    choices: tuple[str, ...] = (),
    doc: str,
    unit: str = "",
    prior: Any = None,
) -> Any:
    """A required field (no default: the YAML holds it) with its :class:`~dabench.config.fields.Spec`:
    numbers in ``(low, high]`` (``high`` unset: :data:`MAX_KNOB`), integers above 0 unless ``low``
    says otherwise, ``choices`` the strings allowed (beside a number, where bounds are given too);
    ``prior``: a knob fitted to calibration points, its ``Provenance(bounds=(lo, hi), points=(ids))``
    (dabench/fit/sources.py: what ``dabench fit`` fits it to, within what)."""
    kind = BOOL if boolean else INT if integer else NUMBER if low is not None or high is not None else CHOICE
    low = 0 if integer and low is None else low
    high = MAX_KNOB if kind in (INT, NUMBER) and high is None else high
    return field_(
        kind=kind, low=low, low_open=low is not None, high=high, choices=tuple(choices), doc=doc, unit=unit, prior=prior
    )


def _checked(spec: Spec, name: str, value: Any) -> Any:
    """``value`` of knob ``name`` converted to its type, or ConfigError naming ``hardware.options.<name>``."""
    if spec.kind != CHOICE and isinstance(value, str) and value in spec.choices:
        return value  # a number-or-string knob's string (replicas: auto)
    if spec.kind in (INT, NUMBER) and isinstance(value, str):  # "2.75e16": YAML 1.1 reads it as a string
        with contextlib.suppress(ValueError):
            value = float(value)
    if spec.kind == INT and isinstance(value, float) and value.is_integer():
        value = int(value)
    return check_value(spec, value, f"hardware.options.{name}")


def build_knobs(arch: str, options: Mapping[str, Any]) -> Any:
    """The knob dataclass of ``arch`` from a ``hardware.options`` mapping; ConfigError on an
    unknown, missing or invalid knob."""
    options_of = platform(arch).options
    if not options_of:
        raise ConfigError("hardware.arch", arch, "a platform with knobs (dabench/platforms/, docs/platforms.md)")
    cls = options_of()
    known = specs(cls)
    for key in options:
        if key not in known and not str(key).startswith(RUNNER_PREFIX):
            hint = f"; keys starting with {RUNNER_PREFIX!r} go to the vendor runner"
            raise refuse(f"hardware.options.{key}", options[key], suggest(str(key), known, "hardware.options.") + hint)
    missing = [name for name in known if name not in options]
    if missing:
        raise ConfigError(
            f"hardware.options.{missing[0]}",
            None,
            f"required knob of {arch} is missing (set it in conf/hardware/{arch}.yaml's options)",
        )
    return cls(**{name: _checked(spec, name, options[name]) for name, spec in known.items()})


_CACHE: dict[tuple[str, int, str], tuple[Mapping[str, Any], Any]] = {}


def knobs_for(hardware: Any) -> Any:
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
    built = build_knobs(hardware.arch, merged)
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = (options, built)  # holding the mapping keeps its id from being reused
    return built
