"""Structured search spaces: ``hydra.sweeper.space.hook: "module.path:factory"``, called once as
``factory(config=<composed task config>, **hydra.sweeper.space.args)``, returns an object with
``suggest(trial) -> {override key: value}`` and optionally ``grid()`` and ``params_of(deployment)``
(the protocol: docs/tuning.md, "IPU placements, valid by construction").
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

from dabench.core.status import ConfigError


@runtime_checkable
class StructuredSpace(Protocol):
    def suggest(self, trial) -> dict[str, Any]: ...


def resolve_target(target: str, field: str = "hydra.sweeper.space.hook") -> Any:
    """Import ``module.path:attribute`` (or ``module.path.attribute``)."""
    module_name, sep, attribute = target.partition(":")
    if not sep:
        module_name, _, attribute = target.rpartition(".")
    if not module_name or not attribute:
        raise ConfigError(field, target, "a dotted path 'package.module:callable'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(field, target, f"an importable module ({error})") from error
    try:
        return getattr(module, attribute)
    except AttributeError as error:
        raise ConfigError(field, target, f"a name defined in {module_name}") from error


def load_space(hook: str, config: Mapping[str, Any], args: Mapping[str, Any] | None = None) -> StructuredSpace:
    """Build the structured space named by ``hook`` for the composed task ``config``."""
    factory = resolve_target(hook)
    try:
        space = factory(config=config, **dict(args or {}))
    except TypeError as error:
        raise ConfigError("hydra.sweeper.space.args", dict(args or {}), f"arguments {hook} accepts ({error})") from None
    if not isinstance(space, StructuredSpace):
        raise ConfigError("hydra.sweeper.space.hook", hook, "a factory returning an object with suggest(trial)")
    return space


def grid_of(space: StructuredSpace) -> Iterable[dict[str, Any]]:
    grid = getattr(space, "grid", None)
    if grid is None:
        raise ValueError(f"{type(space).__name__} cannot enumerate its space (no grid())")
    return grid()
