"""Every subcommand's arguments, declared once: a :class:`Schema` of :class:`Arg` (type, range,
one-line doc, whether it repeats), checked before any work and shown by ``--help``.

``parse(schema, argv)`` returns the values (an ``argparse.Namespace``) or raises :class:`ArgError`,
one line naming the argument, the value and what is valid; ``parse_or_exit`` prints it as
``dabench <command>: ...`` and exits 2. Options and positionals (argparse), or ``key=value`` words
(``Schema(words=True)``).
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

MAX_TEXT = 4096  #: characters of one text argument (a path, a URI, a name)


class ArgError(ValueError):
    """One line: ``NAME=VALUE: what is valid``."""

    def __init__(self, name: str, value: str | None, valid: str):
        where = name if value is None else f"{name}={show(value)}"
        super().__init__(f"{where}: {valid}" if where else valid)


def show(value: str) -> str:
    """``value`` as one short line (control characters and long values as a cut repr)."""
    if value and value.isprintable() and len(value) <= 80 and value.strip() == value:
        return value
    return repr(value[:80]) + ("..." if len(value) > 80 else "")


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e12 else f"{x:g}"


@dataclass(frozen=True)
class Arg:
    """One argument. ``name``: ``--opt``, a positional ``name`` or a ``key`` of a words schema.
    ``low``/``high`` bound numbers (``above``: ``low`` excluded); ``choices`` (a tuple, or a
    function giving one) bounds ``choice`` and each item of a comma ``list``; ``convert`` reads
    a number's text (default ``int``/``float``)."""

    name: str
    doc: str
    kind: Literal["flag", "int", "float", "str", "path", "choice", "list"] = "str"
    default: Any = None
    low: float | None = None
    high: float | None = None
    above: bool = False
    choices: tuple[str, ...] | Callable[[], Sequence[str]] = ()
    repeats: bool = False
    nargs: str | None = None
    const: Any = None
    required: bool = False
    empty_ok: bool = False
    metavar: str | None = None
    convert: Callable[[str], Any] | None = None
    short: str = ""

    @property
    def option(self) -> bool:
        return self.name.startswith("-")

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    def allowed(self) -> tuple[str, ...]:
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def valid(self) -> str:
        """What is valid, as words: "an integer in 0..65535", "one of a, b", ..."""
        if self.kind in ("int", "float"):
            noun = "an integer" if self.kind == "int" else "a finite number"
            lo = "" if self.low is None else f"{'>' if self.above else '>='} {_number(self.low)}"
            hi = "" if self.high is None else f"<= {_number(self.high)}"
            if self.low is not None and self.high is not None and not self.above:
                return f"{noun} in {_number(self.low)}..{_number(self.high)}"
            return " ".join(p for p in (noun, lo, "and" if lo and hi else "", hi) if p)
        if self.kind == "choice":
            return "one of " + ", ".join(self.allowed())
        if self.kind == "list":
            return "a comma list, each at most once, of " + ", ".join(self.allowed())
        return f"{'a' if self.empty_ok else 'a non-empty'} printable text of at most {MAX_TEXT} characters"

    def check(self, text: str) -> Any:
        """The value of ``text``, or ArgError."""
        if not isinstance(text, str):  # a const or default, not typed by the user
            return text
        bad = ArgError(self.name, text, f"must be {self.valid()}")
        if len(text) > MAX_TEXT or not text.isprintable() or (not text and not self.empty_ok):
            raise bad
        if self.kind in ("int", "float"):
            try:
                value = (self.convert or (int if self.kind == "int" else float))(text)
            except (ValueError, OverflowError):
                raise bad from None
            if isinstance(value, float) and not math.isfinite(value):
                raise bad
            if self.low is not None and (value <= self.low if self.above else value < self.low):
                raise bad
            if self.high is not None and value > self.high:
                raise bad
            return value
        if self.kind == "choice" and text not in self.allowed():
            raise bad
        if self.kind == "list":
            items = text.split(",")
            unknown = [i for i in items if i not in self.allowed()]
            if unknown:
                raise ArgError(self.name, text, f"unknown {unknown[0]!r}; must be {self.valid()}")
            if len(set(items)) != len(items):
                raise bad
            return items
        return Path(text) if self.kind == "path" else text

    def help(self) -> str:
        extra = [] if self.kind in ("flag", "str", "path") else [self.valid()]
        if self.default is not None and self.default is not False and self.default != []:
            shown = ",".join(self.default) if isinstance(self.default, list) else self.default
            extra.append(f"default {shown}")
        if self.repeats:
            extra.append("may repeat")
        text = self.doc + (f" ({'; '.join(extra)})" if extra else "")
        return text.replace("%", "%%")


@dataclass(frozen=True)
class Schema:
    """A command's arguments. ``words``: ``key=value`` words; ``passthrough``: a key prefix
    (such as ``model.``) whose words are kept as given, in order, for the command's own checks."""

    prog: str
    description: str
    args: tuple[Arg, ...]
    words: bool = False
    passthrough: str = ""
    epilog: str | None = None
    intermixed: bool = False
    exclusive: tuple[str, ...] = ()  #: flags of which at most one may be given


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own complaints, as one line
        raise ArgError("", None, message.replace("\n", " ") + f"; see {self.prog} --help")


def build_parser(schema: Schema) -> argparse.ArgumentParser:
    """An argparse parser for ``--help`` and tokenizing; every value is kept as text (checked later)."""
    parser = _Parser(
        prog=schema.prog,
        description=schema.description,
        epilog=schema.epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for arg in schema.args:
        if arg.kind == "flag":
            kwargs: dict[str, Any] = {"action": "append_const", "const": True}
        elif arg.option:
            kwargs = {"action": "append", "nargs": arg.nargs, "metavar": arg.metavar, "const": arg.const}
        else:  # "required" is checked with the values, in the same words as every other argument
            kwargs = {"nargs": "*" if arg.nargs == "+" else arg.nargs or "?", "metavar": arg.metavar}
        flags = [arg.short, arg.name] if arg.short else [arg.name]
        parser.add_argument(*flags, help=arg.help(), default=None, **kwargs)
    return parser


def _options(schema: Schema, argv: Sequence[str]) -> argparse.Namespace:
    parser = build_parser(schema)
    parse = parser.parse_known_intermixed_args if schema.intermixed else parser.parse_known_args
    found, extra = parse(list(argv))
    if extra:
        key = extra[0].split("=", 1)[0]
        close = difflib.get_close_matches(key, [a.name for a in schema.args if a.option], n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ArgError(key, None, f"unknown argument; {hint}see {schema.prog} --help")
    values = argparse.Namespace()
    for arg in schema.args:
        given = getattr(found, arg.dest)
        if arg.option and given is not None and len(given) > 1 and not arg.repeats:
            raise ArgError(arg.name, None, f"given {len(given)} times; give it once")
        if arg.kind == "flag":
            setattr(values, arg.dest, bool(given))
            continue
        if given is None or given == []:
            if arg.required:
                raise ArgError(arg.name, None, f"required: {arg.doc}")
            setattr(values, arg.dest, arg.default)
            continue
        items = given if arg.option else [given]
        checked = [[arg.check(x) for x in item] if isinstance(item, list) else arg.check(item) for item in items]
        setattr(values, arg.dest, checked if arg.repeats else checked[0])
    return values


def _words(schema: Schema, argv: Sequence[str]) -> argparse.Namespace:
    by_key = {a.name: a for a in schema.args}
    given: dict[str, str] = {}
    passed: list[str] = []
    for word in argv:
        key, sep, text = word.partition("=")
        if not sep:
            valid = ", ".join(by_key) + (f", {schema.passthrough}KEY" if schema.passthrough else "")
            raise ArgError(show(word), None, "arguments are key=value words; valid keys: " + valid)
        if schema.passthrough and key.startswith(schema.passthrough):
            passed.append(word)
            continue
        if key not in by_key:
            close = difflib.get_close_matches(key, by_key, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ArgError(show(key), text, f"unknown argument; {hint}valid: " + ", ".join(by_key))
        if key in given and not by_key[key].repeats:
            raise ArgError(key, text, f"given 2 times ({key}={show(given[key])} first); give it once")
        given[key] = text
    values = argparse.Namespace(passthrough=passed)
    for arg in schema.args:
        if arg.name not in given:
            if arg.required:
                raise ArgError(arg.name, "", f"required: {arg.doc}")
            setattr(values, arg.dest, arg.default)
        else:
            setattr(values, arg.dest, arg.check(given[arg.name]))
    return values


def parse(schema: Schema, argv: Sequence[str]) -> argparse.Namespace:
    """The checked values of ``argv`` (``--help`` of an options schema prints the page and exits 0), or ArgError."""
    args = _words(schema, argv) if schema.words else _options(schema, argv)
    given = [flag for flag in schema.exclusive if getattr(args, flag.lstrip("-").replace("-", "_"), None)]
    if len(given) > 1:
        raise ArgError(" and ".join(given), None, "they exclude each other: give one")
    return args


def parse_or_exit(schema: Schema, argv: Sequence[str] | None) -> argparse.Namespace:
    """:func:`parse`; on ArgError one line ``<prog>: <error>`` on stderr and exit 2."""
    try:
        return parse(schema, list(sys.argv[1:] if argv is None else argv))
    except ArgError as error:
        print(f"{schema.prog}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def words_help(schema: Schema) -> str:
    width = max(len(f"{a.name}={a.metavar or 'X'}") for a in schema.args)
    lines = [f"  {a.name + '=' + (a.metavar or 'X'):<{width}}  {a.help()}".replace("%%", "%") for a in schema.args]
    return (
        f"usage: {schema.prog} key=value ...\n\n{schema.description}\n\nArguments:\n"
        + "\n".join(lines)
        + (f"\n\n{schema.epilog}" if schema.epilog else "")
    )
