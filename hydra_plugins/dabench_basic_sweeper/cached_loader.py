"""A config loader that composes each *shape* of a multirun's jobs once: the first job of a shape
by Hydra in full, every other one from a deep copy of it with its ``key=value`` / ``++key=value``
overrides applied and the per-job ``hydra.*`` fields set as Hydra's ``load_configuration`` sets
them; anything else (``+``/``~``, ``hydra.*`` keys, group options, mapping, list or interpolated
values, a key given twice, a key that is not a leaf) is composed by Hydra in full
(docs/architecture.md; tests/hydra_plugins/test_cached_composition.py checks the shipped sweeps).
"""

from __future__ import annotations

import copy
import os
from typing import Any, List, Sequence

from omegaconf import DictConfig, OmegaConf, open_dict

from dabench.runtime.hydra_compat import ConfigLoaderImpl, get_overrides_dirname


def shape(overrides: Sequence[str]) -> tuple[str, ...]:
    """What decides whether a job's ``overrides`` compose: each group choice with its option
    (``model=gpt2_test``, ``+sweeps=ipu_deploy``), each dotted key without its value
    (``run.batch_size=*``). dabench's config has no typed Hydra schema, so a value cannot make
    composition fail where another value of the same key composed; values are checked by
    dabench.config.schema when each job runs, and a bad one becomes that job's ``invalid_config`` run.
    A key without a dot is taken as a group (kept with its value): at worst one more
    composition, never one fewer."""
    out = []
    for override in overrides:
        key, sep, _ = override.partition("=")
        out.append(key + "=*" if sep and "." in key.lstrip("+~") else override)
    return tuple(sorted(out))


def representatives(batch: Sequence[Sequence[str]]) -> list[list[str]]:
    """The first job of each :func:`shape` in ``batch``, in order."""
    seen: set[tuple[str, ...]] = set()
    chosen = []
    for overrides in batch:
        key = shape(overrides)
        if key not in seen:
            seen.add(key)
            chosen.append(list(overrides))
    return chosen


class CachingConfigLoader:
    """Wraps Hydra's ``ConfigLoader``; everything but ``load_sweep_config`` is delegated."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._bases: dict[tuple, DictConfig] = {}
        self._parsed: dict[str, Any] = {}
        self._masters: dict[int, DictConfig] = {}
        self._parser = None
        self.full_compositions = 0  #: jobs Hydra composed in full (first of a shape or a fallback)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _parse(self, lines: Sequence[str]) -> list:
        if self._parser is None:
            from hydra.core.override_parser.overrides_parser import OverridesParser

            self._parser = OverridesParser.create(config_loader=self._inner)
        out = []
        for line in lines:
            parsed = self._parsed.get(line)
            if parsed is None:
                parsed = self._parsed[line] = self._parser.parse_overrides([line])[0]
            out.append(parsed)
        return out

    @staticmethod
    def _plain(override, base: DictConfig) -> bool:
        """A ``a.b=value`` (or ``++a.b=value``) Hydra would apply as a plain set of an existing
        leaf of ``base`` (a ``++`` key of the shape is in ``base``: its first job added it)."""
        if override.is_delete() or override.is_add() or override.is_sweep_override() or override.package is not None:
            return False
        key = override.key_or_group
        if "." not in key or key.startswith("hydra.") or key.replace(".", "/") in base.hydra.runtime.choices:
            return False
        value = override.value()
        if isinstance(value, (dict, list)) or "${" in override.get_value_element_as_str():
            return False
        *parents, leaf = key.split(".")
        node = OmegaConf.select(base, ".".join(parents), throw_on_missing=False) if parents else base
        if not isinstance(node, DictConfig) or leaf not in node:
            return False
        return not OmegaConf.is_config(node._get_node(leaf))  # a leaf, not a mapping or list

    def _fresh(self, master_config: DictConfig, sweep_overrides: List[str]) -> DictConfig:
        self.full_compositions += 1
        return self._inner.load_sweep_config(master_config, sweep_overrides)

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: List[str]) -> DictConfig:
        self._masters[id(master_config)] = master_config  # held: its id stays its own while cached
        key = (id(master_config), *shape(sweep_overrides))  # a multirun has one master config
        base = self._bases.get(key)
        if base is None:
            cfg = self._fresh(master_config, sweep_overrides)
            self._bases[key] = copy.deepcopy(cfg)  # pristine: the launcher and run_job write into cfg
            return cfg
        parsed = self._parse(sweep_overrides)
        values = [o for o in parsed if "." in o.key_or_group]
        keys = [o.key_or_group for o in values]
        if len(set(keys)) != len(keys) or not all(self._plain(o, base) for o in values):
            return self._fresh(master_config, sweep_overrides)

        cfg = copy.deepcopy(base)
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
        hydra = cfg.hydra
        task = [o for o in parsed if not o.is_hydra_override()]
        hydra.overrides.task = [o.input_line for o in task]
        with open_dict(hydra):
            for name in hydra.job.env_copy:
                hydra.job.env_set[name] = os.environ[name]
        hydra.runtime.cwd = os.getcwd()
        dirname = hydra.job.config.override_dirname
        hydra.job.override_dirname = get_overrides_dirname(
            overrides=task, kv_sep=dirname.kv_sep, item_sep=dirname.item_sep, exclude_keys=dirname.exclude_keys
        )
        OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
        return cfg
