"""Hydra's BasicSweeper, validating one job per shape before launch and composing each job through
dabench's one composition cache (see the package docstring)."""

from __future__ import annotations

import os
from typing import Any, List, Sequence

from omegaconf import DictConfig, OmegaConf, open_dict

from dabench.config.compose import Composer
from dabench.runtime import interrupts
from dabench.runtime.hydra_compat import BasicSweeper as HydraBasicSweeper
from dabench.runtime.hydra_compat import ConfigLoaderImpl, get_overrides_dirname
from dabench.tracking.redact import redact_hydra_output


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
    chosen: dict[tuple[str, ...], list[str]] = {}
    for overrides in batch:
        chosen.setdefault(shape(overrides), list(overrides))
    return list(chosen.values())


class SweepComposer(Composer):
    """dabench's composition cache (:class:`dabench.config.compose.Composer`) over Hydra's own
    ``load_sweep_config`` of one multirun's ``master`` config: each set of group choices is composed
    by Hydra once, every job from a copy of it with Hydra's own setting of its plain values and the
    per-job ``hydra.*`` fields set as Hydra's ``load_configuration`` sets them."""

    def __init__(self, loader: Any, master: DictConfig) -> None:
        super().__init__()
        self.loader, self.master = loader, master

    def _full(self, overrides: list[str]) -> DictConfig:
        return self.loader.load_sweep_config(self.master, overrides)

    def _settable(self, override, base: DictConfig) -> bool:
        """Not a group written with dots (``a.b=x`` for group ``a/b``), and a plain set."""
        choices = base.hydra.runtime.choices
        return override.key_or_group.replace(".", "/") not in choices and super()._settable(override, base)

    def _apply(self, cfg: DictConfig, values: list, parsed: list) -> DictConfig:
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
        OmegaConf.copy_cache(from_config=self.master, to_config=cfg)
        return cfg


class CachingConfigLoader:
    """Wraps Hydra's ``ConfigLoader``: ``load_sweep_config`` goes through a :class:`SweepComposer`
    of its master config; everything else is delegated."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.composer: SweepComposer | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: List[str]) -> DictConfig:
        if self.composer is None or self.composer.master is not master_config:  # a multirun has one
            self.composer = SweepComposer(self._inner, master_config)
        return self.composer.compose(sweep_overrides)


class BasicSweeper(HydraBasicSweeper):
    """Hydra's BasicSweeper (same ``params`` and ``max_batch_size``); an unknown key or group
    option still fails the multirun before any job starts."""

    def setup(self, *, hydra_context, task_function, config) -> None:
        """Hydra's setup with a :class:`CachingConfigLoader`: the launcher (and
        the check before each batch) compose each set of group choices once."""
        from hydra.types import HydraContext

        loader = hydra_context.config_loader
        if not isinstance(loader, CachingConfigLoader):
            hydra_context = HydraContext(config_loader=CachingConfigLoader(loader), callbacks=hydra_context.callbacks)
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
        launch = self.launcher.launch

        def launch_redacted(*args, **kwargs):  # the launcher's multirun.yaml holds the command's overrides
            from pathlib import Path

            try:
                return launch(*args, **kwargs)
            finally:
                redact_hydra_output(Path(str(config.hydra.sweep.dir)))

        self.launcher.launch = launch_redacted

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        if self.overrides is not None and self.batch_index == 1:  # the first batch: say how many jobs in all
            interrupts.progress(done=0, total=sum(len(b) for b in self.overrides), unit="runs")
        super().validate_batch_is_legal(representatives(batch))
