"""Check one config section (or list item) against its field specs: :func:`check_section` returns
the checked, converted values or raises ConfigError naming the full path, the value and what is
valid (unknown keys with a did-you-mean). Rules across fields: :mod:`dabench.config.build`."""

from __future__ import annotations

import math
from typing import Any, Mapping

from dabench.config.fields import (
    ANY,
    BOOL,
    CHOICE,
    INT,
    ITEMS,
    LIST,
    MAP,
    NUMBER,
    PLACEMENT,
    REQUIRED,
    TEXT,
    Spec,
    did_you_mean,
    specs,
)
from dabench.core.placement import Placement
from dabench.core.status import ConfigError

_LARGEST_FLOAT = 1.7976931348623157e308


def shown(value: Any) -> Any:
    """``value`` abbreviated where it would make an error message long."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    if isinstance(value, str) and len(value) > 120:
        return value[:100] + f"...<{len(value)} characters>"
    if isinstance(value, (list, tuple, dict)) and len(value) > 20:
        return f"<a {type(value).__name__} of {len(value)} items>"
    return value


def refuse(path: str, value: Any, valid: str) -> ConfigError:
    return ConfigError(path, shown(value), valid)


def suggest(word: str, choices: Any, prefix: str = "") -> str:
    """``unknown key; did you mean <prefix><closest>? (valid: ...)``."""
    names = sorted(str(c) for c in choices)
    hint = did_you_mean(word, names, prefix).strip()
    return f"unknown key; {hint} (valid: {', '.join(names)})" if hint else f"unknown key (valid: {', '.join(names)})"


def check_section(cls: type, raw: Any, path: str) -> dict[str, Any]:
    """Field name -> checked value for the section (or item) dataclass ``cls`` from ``raw``."""
    if not isinstance(raw, Mapping):
        raise refuse(path, raw, f"must be a mapping of {', '.join(specs(cls))}")
    known = specs(cls)
    for key in raw:
        if key not in known:
            raise refuse(f"{path}.{key}", raw[key], suggest(str(key), known, f"{path}."))
    out: dict[str, Any] = {}
    for name, spec in known.items():
        value = raw.get(name)
        if value is None and spec.same_as is not None:
            out[name] = out[spec.same_as]
        else:
            out[name] = check_value(spec, value, f"{path}.{name}")
    return out


def check_value(spec: Spec, value: Any, path: str) -> Any:
    """One value (null or absent: the default) checked against ``spec`` and converted."""
    if value is None or (spec.empty_is_null and value == ""):
        if spec.default is REQUIRED:
            raise refuse(path, None, "this field is required")
        return spec.default
    return _CHECKS[spec.kind](spec, value, path)


def _item(spec: Spec, value: Any, path: str) -> Any:
    """A list item or map value: null only where the spec says so."""
    if value is None:
        if spec.nullable:
            return None
        raise refuse(path, value, f"must be {spec.describe()}")
    return _CHECKS[spec.kind](spec, value, path)


def _why(spec: Spec) -> str:
    return f" ({spec.doc})" if spec.doc else ""


def _number(spec: Spec, value: Any, path: str) -> float | int:
    """A NUMBER (as a float) or an INT, within the spec's range."""
    if isinstance(value, bool) or not isinstance(value, int if spec.kind == INT else (int, float)):
        raise refuse(path, value, f"must be {spec.describe()}{_why(spec)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise refuse(path, value, f"must be a finite {spec.describe()[2:]}{_why(spec)}")
    low = spec.low is not None and (value <= spec.low if spec.low_open else value < spec.low)
    if low or (spec.high is not None and value > spec.high):
        raise refuse(path, value, f"must be {spec.span()}{' or null' if spec.nullable else ''}{_why(spec)}")
    return value if spec.kind == INT else float(value)


def _boolean(spec: Spec, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise refuse(path, value, f"must be true or false{_why(spec)}")
    return value


def _text(spec: Spec, value: Any, path: str) -> str:
    """Text; a number (Hydra reads ``model.name=123`` as one) is taken as its text."""
    ok = isinstance(value, str) or (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (not isinstance(value, float) or math.isfinite(value))
    )
    text = str(value) if ok and not (isinstance(value, int) and value.bit_length() > 128) else None
    if text is None or len(text) < spec.min_len or len(text) > spec.max_len or not text.isprintable():
        raise refuse(path, value, f"must be {spec.describe()}")
    return text


def _choice(spec: Spec, value: Any, path: str) -> str:
    if not isinstance(value, str) or value not in spec.choices:
        raise refuse(path, value, f"must be one of {', '.join(spec.choices)}")
    return value


def _list(spec: Spec, value: Any, path: str) -> tuple[Any, ...]:
    """A LIST (each item by ``spec.item``) or ITEMS (each a ``spec.item_type`` section)."""
    if not isinstance(value, (list, tuple)) or len(value) < spec.min_items:
        raise refuse(path, value, f"must be {spec.describe()}")
    if spec.kind == ITEMS:
        return tuple(spec.item_type(**check_section(spec.item_type, v, f"{path}[{i}]")) for i, v in enumerate(value))
    return tuple(_item(spec.item, v, f"{path}[{i}]") for i, v in enumerate(value))


def _map(spec: Spec, value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise refuse(path, value, f"must be {spec.describe()}")
    out = {}
    for key, inner in value.items():
        name = str(key)
        if (
            isinstance(key, bool)
            or not isinstance(key, (str, int))
            or not name
            or len(name) > 250
            or not name.isprintable()
        ):
            raise refuse(path, key, "has a bad key: keys are names of 1 to 250 printable characters")
        if isinstance(inner, bool) and spec.item.kind == TEXT:
            inner = str(inner)  # a tag's true/false is recorded as its text
        out[name] = _item(spec.item, inner, f"{path}.{name}")
    return out


def _finite(spec: Spec, value: Any, path: str) -> Any:
    """An open value (``hardware.options.*``, typed by its owner) whose numbers are finite."""
    if (isinstance(value, float) and not math.isfinite(value)) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) > _LARGEST_FLOAT
    ):
        raise refuse(path, value, "must be a finite number")
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _finite(spec, inner, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, inner in enumerate(value):
            _finite(spec, inner, f"{path}[{i}]")
    return value


def _placement(spec: Spec, value: Any, path: str) -> Placement:
    """A pipeline placement, bounded before it is expanded (:meth:`Placement.parse`)."""
    try:
        return Placement.parse(value, path)
    except ConfigError as error:
        raise refuse(path, value, error.valid) from None


_CHECKS = {
    INT: _number,
    NUMBER: _number,
    BOOL: _boolean,
    TEXT: _text,
    CHOICE: _choice,
    LIST: _list,
    ITEMS: _list,
    MAP: _map,
    PLACEMENT: _placement,
    ANY: _finite,
}
