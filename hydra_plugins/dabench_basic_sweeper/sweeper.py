"""Hydra's BasicSweeper, validating one job per shape before launch (see the package docstring)."""

from __future__ import annotations

from typing import Sequence

from dabench.runtime import interrupts
from dabench.runtime.hydra_compat import BasicSweeper as HydraBasicSweeper
from dabench.tracking.redact import redact_hydra_output

from .cached_loader import CachingConfigLoader, representatives


class BasicSweeper(HydraBasicSweeper):
    """Hydra's BasicSweeper (same ``params`` and ``max_batch_size``); an unknown key or group
    option still fails the multirun before any job starts."""

    def setup(self, *, hydra_context, task_function, config) -> None:
        """Hydra's setup with a :class:`CachingConfigLoader`: the launcher (and
        the check before each batch) compose each shape of job once."""
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
