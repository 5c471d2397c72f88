"""The one command frame. ``@command(...)`` declares a subcommand once: its arguments (config
:class:`~dabench.config.fields.Spec` s keyed ``--option``, positional ``name`` or, with
``words``, ``key`` of ``key=value`` words), the argument holding config overrides, and the sinks
it writes (runtime/sinks.py), each with when. The frame does the rest, before any work: ``--help``;
every argument checked by its Spec and every override by the run's own schema (one line naming the
argument, the value and what is valid, exit 2); the stores opened read-only while the arguments
write no store (tracking/store.py ``read_only``). Any failure is one line ``dabench <cmd>:
<status>: <reason>`` (secrets masked), exit 2 for bad input, else 1; Ctrl-C and SIGTERM as for a
run (runtime/interrupts.guard: 130, 143).
"""

from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dabench.config.check import check_value, shown
from dabench.config.fields import BOOL, INT, LIST, NUMBER, REQUIRED, TEXT, Spec, did_you_mean
from dabench.core.status import ConfigError, DabenchError, Status

MAX_TEXT = 4096  #: characters of one text argument (a path, a URI, a filter)
STORES = ("store", "study_storage")  #: the sinks that are stores (opened read-only while not written)


def arg(kind: str, doc: str, default: Any = None, **spec: Any) -> Spec:
    """One argument's Spec: optional (``default``) unless ``default=REQUIRED``; text of at most
    :data:`MAX_TEXT` characters unless ``max_len`` says less (a name the store bounds)."""
    return Spec(kind, doc=doc, default=default, **({"max_len": MAX_TEXT} | spec if kind == TEXT else spec))


def flag(doc: str) -> Spec:
    return Spec(BOOL, doc=doc, default=False)


def show(value: Any) -> str:
    """``value`` as one short line (control characters and long text as a cut repr)."""
    text = str(shown(value))
    return text if text.isprintable() and len(text) <= 120 and text.strip() == text else repr(text[:100])


@dataclass(frozen=True)
class Command:
    """A subcommand as declared; calling it with ``argv`` runs it through the frame."""

    name: str
    doc: str
    args: Mapping[str, Spec]
    body: Callable[[argparse.Namespace], int]
    words: bool = False
    overrides: str = ""  #: key prefix of the config overrides it takes (``*``: any, as positional ``overrides``)
    writes: Mapping[str, Callable[[argparse.Namespace], bool] | bool] = field(default_factory=dict)
    exclusive: tuple[str, ...] = ()  #: flags of which at most one may be given
    export: str = ""  #: the argument naming the file it exports (``--out/report.html``: that file in its folder)
    epilog: str | None = None

    @property
    def prog(self) -> str:
        return f"dabench {self.name}"

    def written(self, args: argparse.Namespace) -> list[str]:
        """The sinks these arguments write."""
        return [sink for sink, when in self.writes.items() if (when(args) if callable(when) else when)]

    def parse(self, argv: Sequence[str]) -> argparse.Namespace:
        """The checked values of ``argv`` (overrides checked too), or ConfigError."""
        texts, overrides = _words(self, argv) if self.words else (_options(self, argv), [])
        args = argparse.Namespace(
            **{"overrides": overrides}
            | {dest(k): value(k, s, texts[k]) if k in texts else _absent(k, s) for k, s in self.args.items()}
        )
        given = [f for f in self.exclusive if getattr(args, dest(f))]
        if len(given) > 1:
            raise ConfigError(" and ".join(given), None, "they exclude each other: give one")
        if self.overrides:
            from dabench.config.schema import check_override

            for override in args.overrides or ():
                check_override(override, values=True)
        return args

    def help(self) -> str:
        if not self.words:
            return parser(self).format_help()
        metavar = {INT: "N", NUMBER: "N", BOOL: "true|false", LIST: "A,B"}
        words = {f"{key}={metavar.get(spec.kind, 'VALUE')}": spec.doc + _extra(spec) for key, spec in self.args.items()}
        if self.overrides:
            words[f"{self.overrides}KEY=VALUE"] = "config overrides of that section, checked as a run's"
        width = max(map(len, words))
        lines = [f"  {word:<{width}}  {doc}" for word, doc in words.items()]
        text = f"usage: {self.prog} key=value ...\n\n{self.doc}\n\narguments:\n" + "\n".join(lines)
        return text + (f"\n\n{self.epilog}" if self.epilog else "")

    def __call__(self, argv: Sequence[str] | None = None) -> int:
        argv = list(sys.argv[1:] if argv is None else argv)
        if any(a in ("-h", "--help") for a in argv):
            print(self.help())
            return 0
        from dabench.runtime.interrupts import guard
        from dabench.tracking.store import read_only

        try:
            with guard(self.prog):  # Ctrl-C, SIGTERM: open records closed, one line, exit 128 + signal
                args = self.parse(argv)
                key, _, name = self.export.partition("/")
                target = getattr(args, dest(key), None) if key else None
                if target is not None and target != "-" and target.lower() != "none":  # before any work
                    from dabench.pipeline.preflight import check_sink, format_problems

                    problems = check_sink("exports", Path(target, name), key)
                    if problems:
                        print(format_problems(problems), file=sys.stderr)
                        return 2
                with read_only(not set(STORES) & set(self.written(args))):
                    return int(self.body(args) or 0)
        except Exception as error:
            print(f"{self.prog}: {failure(error)}", file=sys.stderr)
            return 2 if isinstance(error, ConfigError) or getattr(error, "status", None) == Status.INVALID_CONFIG else 1


def failure(error: BaseException) -> str:
    """The one line of ``error``, secrets masked: ``ARG=VALUE: what is valid`` for bad input, the
    reason of other bad input, else its status word and reason."""
    from dabench.runtime.sinks import one_line
    from dabench.tracking.redact import MASK, redact_text, redact_uri, secret_env_values

    if isinstance(error, ConfigError):  # URIs and secret values masked; a key such as tokens= is no secret
        where = error.field if error.value is None else f"{error.field}={show(error.value)}"
        line = redact_uri(f"{where}: {error.valid}" if where else error.valid)
        return functools.reduce(lambda text, secret: text.replace(secret, MASK), secret_env_values(), line)
    reason = " ".join(str(error).split())
    from dabench.tracking.outbox import is_unreachable

    if not isinstance(error, (DabenchError, OSError)) and is_unreachable(error):  # MLflow's, from a dead server
        return redact_text(f"{Status.TRACKING_ERROR.value}: the tracking store failed: {reason[:300]}")
    if isinstance(error, DabenchError):
        return redact_text(reason if error.status == Status.INVALID_CONFIG else f"{error.status.value}: {reason}")
    return redact_text(one_line(error) if isinstance(error, OSError) else f"{Status.CRASHED.value}: {one_line(error)}")


def command(name: str, doc: str, args: Mapping[str, Spec], **declared: Any) -> Callable[..., Command]:
    """Declare the decorated ``body(args) -> exit status`` as subcommand ``name`` (see the module doc)."""
    return lambda body: Command(name, doc, args, body, **declared)


def dest(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def _extra(spec: Spec) -> str:
    extra = [] if spec.kind in (BOOL, TEXT) else [spec.describe()]
    if spec.default not in (None, False, REQUIRED, ()):
        extra.append("default " + (",".join(spec.default) if isinstance(spec.default, tuple) else str(spec.default)))
    return f" ({'; '.join(extra)})" if extra else ""


def value(name: str, spec: Spec, texts: Sequence[str] | str) -> Any:
    """The checked value of one argument from its text (a list: each word of a positional, else each
    comma item of each given text)."""
    if spec.kind == LIST:
        split = name.startswith("-") or isinstance(texts, str)
        items = [i for t in ([texts] if isinstance(texts, str) else texts) for i in (t.split(",") if split else [t])]
        if len(set(items)) != len(items):
            raise ConfigError(name, ",".join(items), f"must be {spec.describe()}, each at most once")
        return check_value(spec, [_typed(spec.item or spec, i) for i in items], name)
    try:
        return check_value(spec, _typed(spec, texts), name)
    except ConfigError as error:  # named by the text given, not the number it was read as
        raise ConfigError(name, texts, error.valid) from None


def _absent(name: str, spec: Spec) -> Any:
    """The default of an argument not given; ConfigError for a required one."""
    if spec.required:
        raise ConfigError(name, None, f"required: {spec.doc}")
    return spec.default


def _typed(spec: Spec, text: Any) -> Any:
    """``text`` read as the kind of ``spec`` (what does not read stays text, which the check refuses)."""
    if not isinstance(text, str):
        return text
    read = spec.read or {INT: int, NUMBER: float, BOOL: {"true": True, "false": False}.__getitem__}.get(spec.kind)
    try:
        return read(text) if read else text
    except (ValueError, KeyError, OverflowError):
        return text


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own complaints, as one line
        raise ConfigError("", None, message.replace("\n", " ") + f"; see {self.prog} --help")


def parser(cmd: Command) -> argparse.ArgumentParser:
    """An argparse parser for ``--help`` and tokenizing; every value is kept as text (checked later)."""
    out = _Parser(
        prog=cmd.prog, description=cmd.doc, epilog=cmd.epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for name, spec in cmd.args.items():
        help_ = (spec.doc + _extra(spec)).replace("%", "%%")
        if not name.startswith("-"):
            out.add_argument(name, nargs="*" if spec.kind == LIST else "?", default=None, help=help_)
        elif spec.kind == BOOL:
            out.add_argument(name, action="append_const", const="true", default=None, help=help_)
        else:
            nargs = "+" if spec.kind == LIST else "?" if spec.kind == TEXT and not spec.min_len else None
            const = {"const": ""} if nargs == "?" else {}
            out.add_argument(name, action="append", nargs=nargs, default=None, help=help_, **const)
    return out


def _options(cmd: Command, argv: Sequence[str]) -> dict[str, Any]:
    """Argument name -> its text(s) as given in ``argv`` (absent: not given)."""
    found, extra = parser(cmd).parse_known_intermixed_args(list(argv))
    if extra:
        key = extra[0].split("=", 1)[0]
        hint = did_you_mean(key, [n for n in cmd.args if n.startswith("-")])
        raise ConfigError(show(key), None, f"unknown argument; {hint}see {cmd.prog} --help")
    given = {}
    for name, spec in cmd.args.items():
        texts = getattr(found, dest(name))
        if texts is None or texts == []:
            continue
        if name.startswith("-") and len(texts) > 1 and spec.kind != LIST:
            raise ConfigError(name, None, f"given {len(texts)} times; give it once")
        if name.startswith("-"):  # an option: each use's texts
            texts = [t for used in texts for t in used] if spec.kind == LIST else texts[0]
        given[name] = texts
    return given


def _words(cmd: Command, argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Argument key -> its text, and the config overrides, of ``key=value`` words."""
    given: dict[str, str] = {}
    overrides: list[str] = []
    for word in argv:
        key, sep, text = word.partition("=")
        if cmd.overrides and key.startswith(cmd.overrides) and sep:
            overrides.append(word)
            continue
        if not sep or key not in cmd.args:
            valid = ", ".join(cmd.args) + (f", {cmd.overrides}KEY" if cmd.overrides else "")
            why = "arguments are key=value words" if not sep else f"unknown argument; {did_you_mean(key, cmd.args)}"
            raise ConfigError(show(key), None, f"{why.rstrip('; ')}; valid keys: {valid}")
        if key in given:
            raise ConfigError(key, text, f"given 2 times ({key}={show(given[key])} first); give it once")
        given[key] = text
    return given, overrides
