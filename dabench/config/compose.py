"""The one way dabench composes a config from conf/: :func:`compose` (cached) and :func:`sweeper_params`.
What Hydra or OmegaConf refuses while composing or resolving is a ConfigError (:func:`as_config_error`).

Each Hydra composition leaves GlobalHydra as it found it. A :class:`Composer` composes each distinct
set of group choices once and sets plain ``a.b=value`` overrides on a copy of that base (the same
result as Hydra's full composition: tests/pipeline/test_grid.py); anything else is composed in full."""

from __future__ import annotations

import contextlib
import copy
import operator
import re
import threading
from functools import lru_cache, reduce
from typing import Any, Iterator, Mapping, Sequence

from dabench.config.paths import CONF_DIR
from dabench.core.status import ConfigError

_lock = threading.Lock()
_hydra = None  #: our Hydra object (config search path on conf/), built once per process
MAX_BASES = 256  #: group-choice bases a Composer keeps (the oldest go first)


def _hydra_compose(overrides: Sequence[str], with_hydra: bool = False):
    """Hydra's own composition of ``overrides`` (with the ``hydra`` node when ``with_hydra``)."""
    global _hydra
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    with _lock, as_config_error():
        gh = GlobalHydra.instance()
        previous = gh.hydra if gh.is_initialized() else None
        gh.clear()
        try:
            if _hydra is None:
                initialize_config_dir(config_dir=str(CONF_DIR), version_base=None, job_name="dabench")
                _hydra = gh.hydra
            else:
                gh.initialize(_hydra)
            return hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=with_hydra)
        finally:
            gh.clear()
            if previous is not None:
                gh.initialize(previous)


def compose_full(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config (a plain dict, without the ``hydra`` node), composed by Hydra in full."""
    from omegaconf import OmegaConf

    cfg = _hydra_compose(overrides)
    with as_config_error():
        return OmegaConf.to_container(cfg, resolve=True)  # Hydra leaves out its node


def sweeper_params(overrides: Sequence[str]) -> dict[str, str]:
    """``hydra.sweeper.params`` of the config composed from ``overrides``."""
    cfg = _hydra_compose(overrides, with_hydra=True)
    params = cfg.hydra.sweeper.get("params") if "params" in cfg.hydra.sweeper else None
    return {str(k): str(v) for k, v in (params or {}).items()}


def composition_error(error: BaseException) -> ConfigError | None:
    """Hydra's or OmegaConf's refusal of a composition (an unknown option, key or config folder, a
    value of the wrong type, a broken interpolation, a sweep file without its package line) as one
    ConfigError naming the field, the value and what is valid; None for any other error."""
    from hydra.errors import CompactHydraException
    from omegaconf.errors import OmegaConfBaseException

    if not isinstance(error, (CompactHydraException, OmegaConfBaseException)):
        return None
    cause = error.__cause__ if isinstance(error.__cause__, OmegaConfBaseException) else error
    text = str(error).split("Config search path:")[0] + ("\n" + str(cause) if cause is not error else "")
    lines = [line.strip().rstrip(":.") for line in text.splitlines() if line.strip() and not line.startswith("\t")]
    keys = [line.partition(": ")[2] for line in lines if line.startswith("full_key: ")]
    said = [line for line in lines if not line.startswith(("full_key: ", "reference_type=", "object_type="))]
    origin = re.match(r"In '([^']+)': (.*)", said[0]) if said else None
    if origin:
        said[0] = origin[2]
    missing = getattr(error, "missing_cfg_file", None)
    if missing:  # Hydra's MissingConfigException: an option its group does not have, or no primary config
        group, _, option = missing.strip("'").rpartition("/")
        valid = f"no such option; valid: {', '.join(error.options)}" if error.options else "; ".join(said)
        return ConfigError(group or "--config-name", option, valid)
    if origin and "@sweeps." in text:
        said.append("a sweep file's first line is '# @package _global_' (docs/tuning.md)")
    valid = "; ".join(said) or type(error).__name__
    if keys:
        value = getattr(cause, "value", None)
        node = getattr(cause, "child_node", None)  # an interpolation's own text
        return ConfigError(keys[0], value if value is not None else None if node is None else str(node), valid)
    group, _, option = origin[1].rpartition("/") if origin else ("config", "", None)
    return ConfigError(group or "config", option or None, valid)


@contextlib.contextmanager
def as_config_error() -> Iterator[None]:
    """Around a composition or resolution: :func:`composition_error` raised in place of what it maps."""
    try:
        yield
    except Exception as error:
        problem = composition_error(error)
        if problem is None:
            raise
        raise problem from None


@lru_cache(maxsize=1)
def _parser() -> Any:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


@lru_cache(maxsize=16 * MAX_BASES)
def parse_override(line: str) -> Any:
    """Hydra's parse of one override string, once per distinct string (shared: do not change it)."""
    return _parser().parse_overrides([line])[0]


class Composer:
    """``compose(job)`` == :func:`compose_full`, composing each set of group choices once. A subclass
    gives another full composition (:meth:`_full`: Hydra's own, hydra node included, for the ``-m``
    sweeper) and its way of setting the plain values on a copy of a base (:meth:`_apply`)."""

    def __init__(self) -> None:
        self._bases: dict[tuple[str, ...], dict[str, Any]] = {}
        self.full_compositions = 0  #: jobs composed by Hydra in full (the shortcut did not apply)

    def _settable(self, override, base: Mapping[str, Any]) -> bool:
        """Whether Hydra's effect of ``override`` on ``base`` is a plain set: ``a.b=``/``+a.b=``/``++a.b=``
        as Hydra allows them, under an existing mapping, of a value without mapping or interpolation."""
        key = override.key_or_group
        if override.is_delete() or override.is_sweep_override() or "." not in key or override.package is not None:
            return False
        value = override.value()
        if isinstance(value, dict) or "${" in override.get_value_element_as_str() or "${" in str(value):
            return False
        node: Any = base
        *parents, leaf = key.split(".")
        for part in parents:
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        if not isinstance(node, Mapping) or isinstance(node.get(leaf), Mapping):
            return False
        if override.is_force_add():
            return True
        return (leaf not in node) if override.is_add() else (leaf in node)

    def _full(self, overrides: list[str]) -> Any:
        return compose_full(overrides)

    def _apply(self, out: Any, values: list, parsed: list) -> Any:
        """``out`` (a copy of a base) with the plain ``values`` overrides set."""
        for o in values:
            *parents, leaf = o.key_or_group.split(".")
            reduce(operator.getitem, parents, out)[leaf] = o.value()
        return out

    def compose(self, job: Sequence[str]) -> Any:
        parsed = [parse_override(line) for line in job]
        if not any(o.key_or_group.startswith("hydra.") for o in parsed):
            groups = tuple(o.input_line for o in parsed if "." not in o.key_or_group)
            values = [o for o in parsed if "." in o.key_or_group]
            base = self._bases.get(groups)
            if base is None:
                base = self._full(list(groups))
                if len(self._bases) >= MAX_BASES:
                    self._bases.pop(next(iter(self._bases)))
                self._bases[groups] = base
            if all(self._settable(o, base) for o in values):
                return self._apply(copy.deepcopy(base), values, parsed)
        self.full_compositions += 1  # a hydra.* key, or a value that is no plain set
        return self._full(list(job))


_composer = Composer()
_composer_lock = threading.Lock()


def compose(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """:func:`compose_full` of ``overrides`` through the process's one :class:`Composer` (a fresh dict)."""
    with _composer_lock, as_config_error():
        return _composer.compose(list(overrides))
