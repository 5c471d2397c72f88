"""Evaluate deployments in-process with an analytical model, for benchmarks and tests that need
thousands of evaluations: no Hydra job, no MLflow, no files (not a multirun path: recorded sweeps go
through dabench.pipeline.grid). The objective is the task function's, from the one predictor.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dabench.config.compose import compose
from dabench.core.status import DabenchError, Status
from dabench.predictor import predict
from dabench.tune.driver import Outcome
from dabench.tune.space import override_value


def deployment_config(base: Sequence[str], values: Mapping[str, Any]) -> dict:
    """The composed config of ``base`` (Hydra overrides, e.g. ``+sweeps=NAME``) with the
    deployment's ``values`` (override key -> Python value) set."""
    return compose([*base, *(f"{key}={override_value(value)}" for key, value in values.items())])


class DirectEvaluator:
    """Predicts deployments of the config ``base`` composes."""

    def __init__(self, base: Sequence[str]):
        self.base = list(base)

    def __call__(self, values: Mapping[str, Any]) -> Outcome:
        try:
            metrics = predict(deployment_config(self.base, values)).metrics
        except DabenchError as error:
            return Outcome(None, error.status.value, error.reason, mode="predict")
        return Outcome(metrics["throughput.samples_per_s"], Status.OK.value, mode="predict")
