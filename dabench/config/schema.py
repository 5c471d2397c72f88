"""The schema of the whole config: which keys exist, and each value's type and range.

:func:`validate` runs on the composed mapping before :mod:`dabench.config.build` builds the typed
config (it is called from :func:`~dabench.config.build.build_run_config`), and raises
:class:`~dabench.core.status.ConfigError` (one line: field, value, what is valid) for

- an unknown key anywhere (``+foo=1``, ``+run.batch_sise=8``, ``model.foo=1``), with a
  did-you-mean; the known keys of a section are the fields of its typed config
  (:mod:`dabench.config.build` dataclasses) plus the keys its YAML files under ``conf/`` set.
  Open maps, whose keys are free: :data:`OPEN_MAPS` (``tracking.tags``, ``hardware.options``
  whose knobs are typed by :mod:`dabench.perfmodel`, ``hardware.peak_flops``);
- a value of the wrong type, zero or negative where a count is needed, NaN or infinite, or
  beyond any target dabench models (:data:`RANGES`; docs/config.md lists them).

:func:`check_group_choice` and :func:`check_override_keys` give the same answers for command-line
overrides before Hydra composes anything (``hardware=tpu`` lists the valid options).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from dabench.config.paths import CONF_DIR, SWEEPS_DIR
from dabench.core.status import ConfigError

SECTIONS = ("model", "hardware", "parallel", "precision", "run", "tracking")
#: maps whose keys are free (their values are still checked by their owners)
OPEN_MAPS = ("tracking.tags", "hardware.options", "hardware.peak_flops")
#: keys of list items in hardware
ITEM_KEYS = {
    "hardware.memory": ("name", "capacity_bytes", "bandwidth_Bps", "scope"),
    "hardware.compute_units": ("kind", "count"),
    "hardware.links": ("name", "bandwidth_Bps", "latency_s", "scope"),
}
#: config groups chosen on the command line (``group=option``) and where their options live
GROUPS = {"model": CONF_DIR / "model", "hardware": CONF_DIR / "hardware", "parallel": CONF_DIR / "parallel",
          "precision": CONF_DIR / "precision", "sweeps": SWEEPS_DIR}

INT, NUM = "integer", "number"
#: field -> (type, smallest, largest, why the bound). A bound of None is open. Upper bounds are
#: beyond any target dabench models (the largest: a WSE-2 with 40 GB SRAM, a Bow Pod of 256 IPUs).
RANGES: dict[str, tuple[str, float | None, float | None, str]] = {
    "model.n_layers": (INT, 1, 10_000, "decoder blocks"),
    "model.hidden_size": (INT, 1, 1 << 20, "model width"),
    "model.n_heads": (INT, 1, 65_536, "attention heads; must divide hidden_size"),
    "model.seq_len": (INT, 1, 1 << 22, "tokens per sample"),
    "model.vocab_size": (INT, 1, 1 << 24, "token ids"),
    "model.ffn_mult": (INT, 1, 64, "FFN width / hidden_size"),
    "model.ffn_size": (INT, 0, 1 << 22, "explicit FFN width (0 = ffn_mult x hidden_size)"),
    "model.cross_attention_layers": (INT, 0, 10_000, "at most n_layers"),
    "model.head_tokens": (INT, 0, 1 << 22, "0 = all positions; at most seq_len"),
    "parallel.degree": (INT, 1, 4096, "chips in the tp/pp group or dp copies"),
    "parallel.replicas": (INT, 1, 4096, "copies of a tp/pp group"),
    "parallel.micro_batches": (INT, 1, 1 << 16, "pipeline micro-batches per step"),
    "parallel.timeout_s": (NUM, 1e-3, 7 * 86400, "seconds before a parallel job is killed"),
    "run.batch_size": (INT, 1, 1 << 20, "micro-batch per chip per step"),
    "run.grad_accum": (INT, 1, 1 << 16, "micro-batches per optimizer step"),
    "run.warmup_steps": (INT, 0, 1_000_000, "untimed steps"),
    "run.timed_steps": (INT, 1, 1_000_000, "timed steps"),
    "run.seed": (INT, 0, 2**63 - 1, "random seed"),
    "run.threads": (INT, 1, 4096, "CPU threads (null = torch's default)"),
    "run.lr": (NUM, 0.0, 10.0, "learning rate (> 0)"),
    "tracking.timeout_s": (NUM, 0.1, 3600, "bound on one call to a tracking server or database"),
    "hardware.chips_per_node": (INT, 1, 4096, "chips in one machine"),
}
#: fields whose lower bound is exclusive (must be > smallest)
EXCLUSIVE_MIN = {"run.lr"}


# ----------------------------------------------------------------------------- known keys


@lru_cache(maxsize=None)
def _load_yaml(path: Path) -> Any:
    """One YAML file (parsed once per process, with libyaml when available; None if unreadable)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(path.read_text(), Loader=loader)
    except (OSError, yaml.YAMLError):
        return None


@lru_cache(maxsize=None)
def _yaml_files(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted(folder.glob("*.yaml")) + sorted(folder.glob("*/*.yaml")))


def _yaml_keys(folder: Path, section: str | None) -> set[str]:
    """Keys set by the YAML files of a conf group (``section`` None) or by the ``section``
    part of global-package files (sweeps, default sweeps)."""
    keys: set[str] = set()
    for path in _yaml_files(folder):
        data = _load_yaml(path)
        if not isinstance(data, Mapping):
            continue
        part = data if section is None else data.get(section)
        if isinstance(part, Mapping):
            keys.update(str(k) for k in part)
    return keys - {"defaults"}


#: section -> its typed config class; filled by :mod:`dabench.config.build` when it is imported
#: (:func:`register_sections`), so this module never imports it (config -> schema, one way)
SECTION_TYPES: dict[str, type] = {}


def register_sections(types: Mapping[str, type]) -> None:
    SECTION_TYPES.update(types)
    known_keys.cache_clear()


@lru_cache(maxsize=None)
def known_keys(section: str) -> frozenset[str]:
    """The keys a config section may have: its typed config's fields and what conf/ sets."""
    keys = {f.name for f in dataclasses.fields(SECTION_TYPES[section])} if section in SECTION_TYPES else set()
    if section in GROUPS:
        keys |= _yaml_keys(GROUPS[section], None)
    keys |= _yaml_keys(CONF_DIR, section) | _yaml_keys(SWEEPS_DIR, section)
    extras = {"parallel": {"placement"}}
    return frozenset(keys | extras.get(section, set()))


def _suggest(word: str, choices: set[str] | frozenset[str] | list[str], prefix: str = "") -> str:
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    valid = ", ".join(sorted(choices))
    return (f"unknown key; did you mean {prefix}{close[0]}? (valid: {valid})" if close
            else f"unknown key (valid: {valid})")


def check_keys(cfg: Mapping[str, Any]) -> None:
    """Refuse any key the schema does not know (see module docstring)."""
    for key in cfg:
        if key not in SECTIONS:
            raise ConfigError(str(key), cfg[key], _suggest(str(key), set(SECTIONS)))
    for section in SECTIONS:
        body = cfg.get(section)
        if not isinstance(body, Mapping):
            continue
        allowed = known_keys(section)
        for key, value in body.items():
            name = f"{section}.{key}"
            if key not in allowed:
                raise ConfigError(name, value, _suggest(str(key), allowed, f"{section}."))
            if name in ITEM_KEYS and isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    for item_key in (item or {}) if isinstance(item, Mapping) else ():
                        if item_key not in ITEM_KEYS[name]:
                            raise ConfigError(f"{name}[{i}].{item_key}", item[item_key],
                                              _suggest(str(item_key), set(ITEM_KEYS[name]), f"{name}[{i}]."))


# ----------------------------------------------------------------------------- values


def check_value(name: str, value: Any) -> None:
    """One field against :data:`RANGES` (None passes: requiredness is the builder's job)."""
    if name not in RANGES or value is None:
        return
    kind, low, high, what = RANGES[name]
    span = f"{'>' if name in EXCLUSIVE_MIN else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == INT and not isinstance(value, int)):
        raise ConfigError(name, value, f"must be {'an ' if kind == INT else 'a '}{kind} {span} ({what})")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(name, value, f"must be a finite {kind} {span} ({what})")
    too_low = low is not None and (value <= low if name in EXCLUSIVE_MIN else value < low)
    if too_low or (high is not None and value > high):
        raise ConfigError(name, value, f"must be {span} ({what})")


def _check_numbers(prefix: str, value: Any) -> None:
    """Every float anywhere under hardware (peak FLOP/s, capacities, bandwidths, latencies and
    options) is finite; capacities, bandwidths and peaks are not negative."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _check_numbers(f"{prefix}.{key}", inner)
    elif isinstance(value, (list, tuple)):
        for i, inner in enumerate(value):
            _check_numbers(f"{prefix}[{i}]", inner)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(prefix, value, "must be a finite number")
    elif (isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0
          and prefix.rsplit(".", 1)[-1] in ("capacity_bytes", "bandwidth_Bps", "latency_s", "count")):
        raise ConfigError(prefix, value, "must not be negative")


def check_values(cfg: Mapping[str, Any]) -> None:
    for name in RANGES:
        section, key = name.split(".", 1)
        body = cfg.get(section)
        if isinstance(body, Mapping) and key in body:
            check_value(name, body[key])
    if isinstance(cfg.get("hardware"), Mapping):
        _check_numbers("hardware", {k: v for k, v in cfg["hardware"].items() if k != "options"})
    run_name = (cfg.get("tracking") or {}).get("run_name")
    if run_name is not None and (not isinstance(run_name, str) or any(ord(c) < 32 for c in run_name)
                                 or len(run_name) > 250):
        raise ConfigError("tracking.run_name", run_name, "must be text of at most 250 printable characters")


def validate(cfg: Mapping[str, Any]) -> None:
    """Keys, then values, of a composed config mapping; ConfigError on the first problem."""
    check_keys(cfg)
    check_values(cfg)


# ----------------------------------------------------------------------------- command line


def group_options(group: str) -> list[str]:
    folder = GROUPS[group]
    return sorted(p.stem for p in folder.glob("*.yaml"))


def check_group_choice(group: str, option: str) -> None:
    """``group=option`` names a file of the group; else ConfigError listing the valid options."""
    options = group_options(group)
    if option not in options:
        close = difflib.get_close_matches(option, options, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ConfigError(group, option, f"unknown {group} option; {hint}valid: {', '.join(options)}")


def check_override(override: str) -> None:
    """One command-line override (before Hydra): a group choice must exist, and a ``section.key``
    must be a known key (``+``/``++`` additions included; open maps excepted)."""
    if override.startswith("hydra") or override.startswith("~") or "=" not in override:
        return
    key, _, value = override.partition("=")
    key = key.lstrip("+")
    if key.startswith("hydra") or "/" in key or "@" in key:
        return
    values = [v.strip() for v in value.split(",")] if "," in value and "(" not in value else [value.strip()]
    if key in GROUPS:
        for option in values:
            if option and not option.startswith(("${", "choice(", "range(", "interval(", "glob(")):
                check_group_choice(key, option)
        return
    parts = key.split(".")
    if parts[0] not in SECTIONS:
        raise ConfigError(key, value, _suggest(parts[0], set(SECTIONS) | set(GROUPS)))
    if len(parts) >= 2:
        if any(key == m or key.startswith(m + ".") for m in OPEN_MAPS):
            return
        allowed = known_keys(parts[0])
        if parts[1] not in allowed:
            raise ConfigError(key, value, _suggest(parts[1], allowed, f"{parts[0]}."))


#: Hydra flags that take a value (the next argument is not an override)
_VALUE_FLAGS = {"-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir", "-c", "--cfg",
                "-p", "--package", "--info", "--experimental-rerun"}


def check_command_line(argv: list[str]) -> None:
    """Every override of a ``python -m dabench`` command line (see :func:`check_override`)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            skip = arg in _VALUE_FLAGS
            continue
        check_override(arg)


def refuse_bad_command_line(argv: list[str] | None = None) -> None:
    """:func:`check_command_line` on ``sys.argv``; a problem is printed as one line and the
    process exits with status 2 (nothing has run)."""
    import sys

    try:
        check_command_line(sys.argv[1:] if argv is None else argv)
    except ConfigError as error:
        print(f"dabench: {error}", file=sys.stderr)
        raise SystemExit(2) from None
