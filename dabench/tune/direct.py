"""Evaluate deployments in-process with an analytical model, for benchmarks and tests that need
thousands of evaluations: no Hydra job, no MLflow, no files (not a multirun path: recorded sweeps go
through dabench.pipeline.grid). The objective is the task function's, from ``predict_config``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dabench.config.build import build_run_config
from dabench.config.compose import compose
from dabench.core.status import DabenchError, Status
from dabench.pipeline.execute import predict_config
from dabench.tune.driver import Outcome
from dabench.tune.space import override_value
from dabench.workload.opgraph import build_opgraph


def deployment_config(base: Sequence[str], values: Mapping[str, Any]) -> dict:
    """The composed config of ``base`` (Hydra overrides, e.g. ``+sweeps=NAME``) with the
    deployment's ``values`` (override key -> Python value) set."""
    return compose([*base, *(f"{key}={override_value(value)}" for key, value in values.items())])


class DirectEvaluator:
    """Predicts deployments of the config ``base`` composes. Op graphs are cached per (model,
    micro-batch, precision)."""

    def __init__(self, base: Sequence[str]):
        self.base = list(base)
        self._graphs: dict[tuple, Any] = {}

    def __call__(self, values: Mapping[str, Any]) -> Outcome:
        try:
            rc = build_run_config(deployment_config(self.base, values))
            key = (rc.model, rc.run.batch_size, rc.precision)
            graph = self._graphs.get(key)
            if graph is None:
                graph = self._graphs[key] = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
            metrics = predict_config(rc, graph).metrics
        except DabenchError as error:
            return Outcome(None, error.status.value, error.reason, mode="predict")
        return Outcome(metrics["throughput.samples_per_s"], Status.OK.value, mode="predict")
