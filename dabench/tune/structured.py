"""Structured search spaces: ``hydra.sweeper.space.hook: "module.path:factory"``, called once as
``factory(config=<composed task config>, **hydra.sweeper.space.args)``, returns an object with
``suggest(trial) -> {override key: value}`` and optionally ``grid()`` and ``params_of(deployment)``
(the protocol: docs/tuning.md, "IPU placements, valid by construction").
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from dabench.core.status import ConfigError


def load_space(hook: str, config: Mapping[str, Any], args: Mapping[str, Any] | None = None) -> Any:
    """Build the structured space named by ``hook`` (``module.path:factory`` or ``module.path.factory``)
    for the composed task ``config``."""
    field = "hydra.sweeper.space.hook"
    module_name, sep, attribute = hook.partition(":")
    if not sep:
        module_name, _, attribute = hook.rpartition(".")
    if not module_name or not attribute:
        raise ConfigError(field, hook, "a dotted path 'package.module:callable'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(field, hook, f"an importable module ({error})") from error
    factory = getattr(module, attribute, None)
    if factory is None:
        raise ConfigError(field, hook, f"a name defined in {module_name}")
    try:
        space = factory(config=config, **dict(args or {}))
    except TypeError as error:
        raise ConfigError("hydra.sweeper.space.args", dict(args or {}), f"arguments {hook} accepts ({error})") from None
    if not hasattr(space, "suggest"):
        raise ConfigError("hydra.sweeper.space.hook", hook, "a factory returning an object with suggest(trial)")
    return space
