"""Hydra's BasicSweeper, validating one job per shape before launch (see the package docstring)."""

from __future__ import annotations

from typing import Sequence

from dabench.runtime.hydra_compat import BasicSweeper as HydraBasicSweeper


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


class BasicSweeper(HydraBasicSweeper):
    """Hydra's BasicSweeper (same ``params`` and ``max_batch_size``); an unknown key or group
    option still fails the multirun before any job starts."""

    def setup(self, *, hydra_context, task_function, config) -> None:
        """Hydra's setup with a :class:`~.cached_loader.CachingConfigLoader`: the launcher (and
        the check before each batch) compose each shape of job once."""
        from hydra.types import HydraContext

        from .cached_loader import CachingConfigLoader

        loader = hydra_context.config_loader
        if not isinstance(loader, CachingConfigLoader):
            hydra_context = HydraContext(config_loader=CachingConfigLoader(loader), callbacks=hydra_context.callbacks)
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
        launch = self.launcher.launch

        def launch_redacted(*args, **kwargs):  # the launcher's multirun.yaml holds the command's overrides
            from pathlib import Path

            from dabench.tracking.redact import redact_hydra_output

            try:
                return launch(*args, **kwargs)
            finally:
                redact_hydra_output(Path(str(config.hydra.sweep.dir)))

        self.launcher.launch = launch_redacted

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        if self.overrides is not None and self.batch_index == 1:  # the first batch: say how many jobs in all
            from dabench.runtime import interrupts  # "interrupted after 3 of 8 runs" (Ctrl-C, SIGTERM)

            interrupts.progress(done=0, total=sum(len(b) for b in self.overrides), unit="runs")
        super().validate_batch_is_legal(representatives(batch))
