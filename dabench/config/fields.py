"""Field metadata: each config field and each command-line argument declared once (:func:`field_`,
or a :class:`Spec` in a command's declaration, dabench/cli/frame.py) with its type, range, choices
and doc line; its :class:`Spec` is what validation, the schema, ``--help`` and docs/config.md's
reference read. :func:`did_you_mean` is the one near-miss suggestion."""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: a field without a default: the config must set it
REQUIRED: Any = _Required()

#: kinds of value a field holds
INT, NUMBER, BOOL, TEXT, CHOICE = "integer", "number", "boolean", "text", "choice"
LIST, ITEMS, MAP, PLACEMENT, ANY = "list", "items", "map", "placement", "any"


@dataclass(frozen=True)
class Spec:
    """What one field (or one list item, or one open-map value) may hold."""

    kind: str
    doc: str = ""
    default: Any = REQUIRED  #: the value when the key is absent or null; REQUIRED: must be set
    nullable: bool = False  #: null is a value of its own (kept as None)
    low: float | None = None
    high: float | None = None
    low_open: bool = False  #: the lower bound is exclusive (value > low)
    choices: tuple[str, ...] = ()
    item: "Spec | None" = None  #: LIST: each item's spec; MAP: each value's spec
    item_type: type | None = None  #: ITEMS: the dataclass of each item
    min_items: int = 0
    min_len: int = 1  #: TEXT: shortest text
    max_len: int = 250  #: TEXT: longest text
    same_as: str | None = None  #: absent: the value of this sibling field
    empty_is_null: bool = False  #: TEXT: "" means null
    read: Any = None  #: a command-line argument: its text -> value (default: by kind); ValueError refuses
    unit: str = ""  #: the value's unit (platform options: s, B/s, FLOP/s, ...)
    prior: Any = None  #: a platform option fitted to calibration points: its prior (a fit.sources.Provenance)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and self.same_as is None and not self.nullable

    def describe(self) -> str:
        """What is valid, in words: ``an integer >= 1 and <= 4096``, ``one of gelu, swiglu``."""
        if self.kind == CHOICE:
            text = f"one of {', '.join(self.choices)}"
        elif self.kind in (INT, NUMBER):
            text = f"{'an' if self.kind == INT else 'a'} {self.kind} {self.span()}"
        elif self.kind == BOOL:
            text = "true or false"
        elif self.kind == TEXT:
            least = "at most " if self.empty_is_null or not self.min_len else "1 to "
            text = f"text of {least}{self.max_len} printable characters"
        elif self.kind in (LIST, ITEMS):
            text = f"{self.a_list()} of {self.item.plural() if self.kind == LIST else 'mappings'}"
        elif self.kind == MAP:
            text = f"a mapping of names to {self.item.plural()}"
        elif self.kind == PLACEMENT:
            text = 'a list of layer counts or a string like "0 4 4 4" or "0 1x8 0x7"'
        else:
            text = "any value"
        return text + (" or null" if self.nullable else "")

    def a_list(self) -> str:
        if self.min_items > 1:
            return f"a list of at least {self.min_items}"
        return "a non-empty list" if self.min_items else "a list"

    def plural(self) -> str:
        """How list items or map values are described: ``integers >= 0``, ``fp32, fp16 ...``."""
        if self.kind == CHOICE:
            return "names among " + ", ".join(self.choices)
        if self.kind in (INT, NUMBER):
            return f"{self.kind}s {self.span()}" + (" or null" if self.nullable else "")
        if self.kind == TEXT:
            return "text, numbers or true/false"
        return "values (numbers finite)"

    def span(self) -> str:
        """The range in words: ``>= 1 and <= 4096``, ``> 0``."""
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.bound(self.low)}")
        if self.high is not None:
            parts.append(f"<= {self.bound(self.high)}")
        return " and ".join(parts) + (f" {self.unit}" if self.unit and parts else "")

    def bound(self, value: float) -> str:
        return str(int(value)) if self.kind == INT else f"{value:g}"


def did_you_mean(word: str, names: Any, prefix: str = "") -> str:
    """``did you mean <prefix><closest>? `` when one of ``names`` is close to ``word``, else ``""``."""
    close = difflib.get_close_matches(str(word), [str(n) for n in names], n=1, cutoff=0.6)
    return f"did you mean {prefix}{close[0]}? " if close else ""


def field_(default: Any = REQUIRED, *, doc: str, init_default: bool = True, **spec: Any) -> Any:
    """A dataclass field carrying its :class:`Spec` keywords (``kind`` defaults to the annotation's).
    A dict default becomes a factory; ``init_default`` False: the default applies to configs only."""
    meta = {"spec": dict(doc=doc, default=default, **spec)}
    if default is REQUIRED or not init_default:
        return dataclasses.field(metadata=meta)
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


#: the kind of a plain annotation
_SCALARS: dict[Any, str] = {bool: BOOL, int: INT, float: NUMBER, str: TEXT}


def _kind(hint: Any) -> tuple[str, bool, type | None]:
    """(kind, nullable, item dataclass) of a type annotation."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        kind, _, item_type = _kind(inner[0])
        return kind, True, item_type
    if hint in _SCALARS:
        return _SCALARS[hint], False, None
    if getattr(hint, "__name__", "") == "Placement":
        return PLACEMENT, False, None
    origin = typing.get_origin(hint)
    if origin is tuple and args and dataclasses.is_dataclass(args[0]):
        return ITEMS, False, args[0]
    if origin is tuple:
        return LIST, False, None
    if origin in (collections.abc.Mapping, dict) or hint is dict:
        return MAP, False, None
    return ANY, False, None


def spec_of(f: dataclasses.Field, hint: Any) -> Spec:
    """The :class:`Spec` of one dataclass field (its annotation resolved to ``hint``)."""
    meta = dict(f.metadata.get("spec") or {"doc": ""})
    kind, nullable, item_type = _kind(hint)
    if meta.get("choices") and kind == TEXT:
        kind = CHOICE
    kind = meta.pop("kind", None) or kind
    default = meta.pop("default", REQUIRED)
    if default is REQUIRED and f.default is not dataclasses.MISSING:
        default = f.default
    if nullable and default is REQUIRED and meta.get("same_as") is None:
        default = None
    return Spec(kind, nullable=nullable, default=default, item_type=item_type, **meta)


@lru_cache(maxsize=None)
def specs(cls: type) -> dict[str, Spec]:
    """name -> :class:`Spec` of every field of a section (or list-item) dataclass, in order, and
    of the keys it reads but does not keep (``INPUTS``: e.g. ``parallel.placement``)."""
    hints = typing.get_type_hints(cls)
    out = {f.name: spec_of(f, hints[f.name]) for f in dataclasses.fields(cls)}
    out.update(getattr(cls, "INPUTS", {}))
    return out
