"""The schema of the whole config, derived from the section dataclasses' field specs: the known
keys and :func:`fields` (docs/config.md's reference), and the same checks on command-line overrides
before Hydra composes anything (:func:`check_override`)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterator, Mapping, NoReturn, Sequence

from dabench.config.check import check_value, refuse, suggest
from dabench.config.fields import ITEMS, LIST, MAP, Spec, did_you_mean, specs
from dabench.config.files import config_file, hardware_preset, read_sweep
from dabench.config.paths import CONF_DIR, SWEEPS_DIR, sweep_folders
from dabench.config.sections import SECTION_TYPES
from dabench.core.platforms import registry
from dabench.core.readers import DamagedFile
from dabench.core.status import ConfigError

SECTIONS = tuple(SECTION_TYPES)
#: config groups chosen on the command line (``group=option``) and where their options live
GROUPS = {**{group: CONF_DIR / group for group in ("model", "hardware", "parallel", "precision")}, "sweeps": SWEEPS_DIR}


def _fields(prefix: str, cls: type) -> Iterator[tuple[str, Spec]]:
    """(path, spec) of every field of ``cls``, list items' fields included (``hardware.memory[].name``)."""
    for name, spec in specs(cls).items():
        path = f"{prefix}.{name}"
        yield path, spec
        if spec.kind == ITEMS:
            yield from _fields(path + "[]", spec.item_type)


def fields() -> dict[str, Spec]:
    """Path -> spec of every field of the schema, list items' fields included, in order."""
    return {path: spec for section, cls in SECTION_TYPES.items() for path, spec in _fields(section, cls)}


def check_keys(cfg: Mapping[str, Any]) -> None:
    """Refuse a top-level key that is not a section (with a did-you-mean)."""
    for key in cfg:
        if key not in SECTIONS:
            raise refuse(str(key), cfg[key], suggest(str(key), SECTIONS))


def group_folders(group: str, argv: Sequence[str] = ()) -> list[Path]:
    """Where the options of ``group`` are looked up (sweeps: also the user's)."""
    if group == "sweeps":
        return sweep_folders(argv)
    return [GROUPS[group], *(Path(p.conf) / group for p in registry().values() if p.conf)]  # installed platforms


def group_options(group: str, argv: Sequence[str] = ()) -> list[str]:
    """The options of a config group (its YAML files), sorted."""
    return sorted({p.stem for folder in group_folders(group, argv) for p in folder.glob("*.yaml")})


def check_group_choice(group: str, option: str, argv: Sequence[str] = ()) -> None:
    """ConfigError listing the valid options unless ``group=option`` names a file of the group."""
    options = group_options(group, argv)
    if option not in options:
        hint = did_you_mean(option, options)
        where = f" (looked in {', '.join(map(str, group_folders(group, argv)))})" if group == "sweeps" else ""
        raise ConfigError(group, option, f"unknown {group} option; {hint}valid: {', '.join(options)}{where}")
    if group == "sweeps":  # the user's own file: one line on a broken one, not Hydra's traceback
        path = next(f / f"{option}.yaml" for f in group_folders(group, argv) if (f / f"{option}.yaml").is_file())
        try:
            read_sweep(path)
        except (OSError, DamagedFile) as error:
            problem = getattr(error, "problem", "") or f"cannot be read ({type(error).__name__})"
            raise ConfigError(group, option, f"{path}: {problem}") from None


#: the longest part of an override key: MLflow's key limit, below 255-byte file names
MAX_KEY_PART = 250


def check_override(override: str, values: bool = False, argv: Sequence[str] = ()) -> None:
    """One command-line override: a group choice must exist, a ``section.key`` be known (open maps
    excepted), a plain value be valid for its field and, with ``values``, each item of a comma list."""
    if "=" not in override and not override.startswith("~"):
        return
    key, _, value = override.partition("=")
    _check_syntax(override, key, value)
    if override.startswith(("hydra", "~")):
        return
    key = key.lstrip("+")
    longest = max(key.split("."), key=len)
    if len(longest) > MAX_KEY_PART:
        raise ConfigError(
            key[:60] + "...", value, f"a key part of at most {MAX_KEY_PART} characters (this one has {len(longest)})"
        )
    if key.startswith("hydra") or "/" in key or "@" in key:
        return
    if key in GROUPS:
        for option in [v.strip() for v in value.split(",")] if "," in value and "(" not in value else [value.strip()]:
            if option and not option.startswith(("${", "choice(", "range(", "interval(", "glob(")):
                check_group_choice(key, option, argv)
        return
    parts = key.split(".")
    if parts[0] not in SECTIONS:
        raise ConfigError(key, value, suggest(parts[0], set(SECTIONS) | set(GROUPS)))
    leaf = _check_path(key, parts[1:], SECTION_TYPES[parts[0]], parts[0], value)
    if leaf is not None:
        _check_literal(override, *leaf, items=values)


def _check_syntax(override: str, key: str, value: str) -> None:
    """ConfigError, in one line, for an override Hydra's grammar cannot parse."""
    from dabench.config.compose import parse_override

    try:
        parse_override(override)
    except Exception as error:  # hydra.errors.OverrideParseException: its message, less the caret and the link
        lines = [" ".join(line.split()) for line in str(error).splitlines()]
        why = next((line for line in lines if line and not line.startswith(("See ", "^"))), "a syntax error")
        why = why if len(why) <= 120 else why[:117] + "..."
        valid = f"not an override Hydra can parse ({why}); quote a value with special characters: key='...'"
        raise ConfigError(key, value, valid) from None


def _check_literal(override: str, path: str, spec: Spec, items: bool) -> None:
    """The value of ``override`` as Hydra parses it (with ``items``, each item of a comma list),
    against its field's spec (ranges and interpolations are left to Hydra; :func:`_check_syntax` parsed it)."""
    from dabench.config.compose import parse_override

    parsed = parse_override(override)
    value = parsed.value()
    sweep = parsed.is_sweep_override()
    for item in (getattr(value, "list", None) or [] if items else []) if sweep else [value]:  # a comma list: each item
        item = getattr(item, "text", item)  # a quoted item of a list: its text
        if "${" not in str(item):
            check_value(spec, item, path)


def _check_path(key: str, parts: list[str], cls: type, prefix: str, value: str) -> tuple[str, Spec] | None:
    """The dotted ``parts`` below ``prefix`` name a field of ``cls`` (list indices into items; below
    an open map anything); the field's (path, spec) when they name one exactly."""
    if not parts:
        return None
    known = specs(cls)
    spec = known.get(parts[0])
    if spec is None:
        raise ConfigError(key, value, suggest(parts[0], known, f"{prefix}."))
    rest = parts[1:]
    if spec.kind == ITEMS and rest:
        if not rest[0].isdigit():
            raise ConfigError(
                key,
                value,
                f"{prefix}.{parts[0]} is a list: name an item by its index "
                f"({prefix}.{parts[0]}.0.<key>; keys: {', '.join(specs(spec.item_type))})",
            )
        return _check_path(key, rest[1:], spec.item_type, f"{prefix}.{parts[0]}[{rest[0]}]", value)
    if rest and spec.kind not in (MAP, LIST):
        raise ConfigError(key, value, f"unknown key: {prefix}.{parts[0]} is a single value, not a section")
    if rest and spec.kind == MAP and len(rest) == 1:
        return f"{prefix}.{parts[0]}.{rest[0]}", spec.item
    if rest and spec.kind == LIST and len(rest) == 1 and rest[0].isdigit():
        return f"{prefix}.{parts[0]}[{rest[0]}]", spec.item
    return (f"{prefix}.{parts[0]}", spec) if not rest else None


#: Hydra flags that take a value (the next argument is not an override)
_VALUE_FLAGS = set(
    "-cn --config-name -cp --config-path -cd --config-dir -c --cfg -p --package --info --experimental-rerun".split()
)


def flags_last(argv: list[str]) -> list[str]:
    """``argv`` with the overrides (in their order) before Hydra's flags, each with its value: Hydra's
    parser takes no override after a flag that follows another override (``a=1 -m b=2``)."""
    flags, overrides, args = [], [], iter(argv)
    for arg in args:
        (flags if arg.startswith("-") else overrides).append(arg)
        if arg in _VALUE_FLAGS:
            flags.extend(itertools.islice(args, 1))
    return overrides + flags


def check_command_line(argv: list[str]) -> None:
    """Hydra's flags, by its own parser, and every override of a command line; each item of a comma
    list too for a single run (not ``-m``: there a bad item is its job's ``invalid_config``)."""
    from hydra._internal.utils import get_args_parser

    def error(message: str) -> NoReturn:
        raise ConfigError("", None, f"{message}; see dabench --help")

    parser = get_args_parser()
    parser.error = error  # argparse's own complaint, as one line
    if parser.parse_intermixed_args(argv).shell_completion:
        raise ConfigError("--shell-completion", None, "not offered: dabench runs as python -m dabench (see --help)")
    values = not any(arg in ("-m", "--multirun") for arg in argv)
    args = iter(argv)
    overrides = []
    for arg in args:
        if arg.startswith("-"):
            if arg in _VALUE_FLAGS:
                next(args, None)  # the flag's value
            continue
        check_override(arg, values, argv)
        overrides.append(arg)
    check_option_keys(overrides, any(a.startswith("-c") or a.startswith("--config") for a in argv))


def check_option_keys(overrides: list[str], other_config: bool = False) -> None:
    """``hardware.options.KEY=V`` (no ``+``) must name an option of the chosen hardware's YAML,
    where the command line makes that choice known."""
    keys = {k: v for k, _, v in (o.partition("=") for o in overrides if o.startswith("hardware.options.") and "=" in o)}
    if not keys:
        return
    choices = [o.partition("=")[2] for o in overrides if o.partition("=")[0].lstrip("+") == "hardware"]
    if choices:
        names = [c.strip() for c in choices[-1].split(",")]
    elif other_config or any(o.lstrip("+").startswith("sweeps") for o in overrides):
        return
    else:  # the option conf/config.yaml's defaults list picks
        defaults = config_file(CONF_DIR / "config.yaml").get("defaults") or []
        names = [next((str(e["hardware"]) for e in defaults if isinstance(e, dict) and "hardware" in e), "")]
    for name in names:
        path = next((f / f"{name}.yaml" for f in group_folders("hardware") if (f / f"{name}.yaml").is_file()), None)
        if not name or path is None:
            return  # not a plain option (a sweep or an interpolation): Hydra and the build decide
        options = hardware_preset(path)["options"]
        for key, value in keys.items():
            option = key.split(".", 2)[2]
            if "." not in option and option not in options:
                raise ConfigError(key, value, suggest(option, options, "hardware.options.") + f" (hardware={name})")


def refuse_bad_command_line(argv: list[str] | None = None) -> None:
    """:func:`check_command_line` on ``sys.argv``; a problem: one line and exit status 2."""
    import sys

    try:
        check_command_line(sys.argv[1:] if argv is None else argv)
    except ConfigError as error:
        print(f"dabench: {error}", file=sys.stderr)
        raise SystemExit(2) from None
