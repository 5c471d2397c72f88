"""Evaluate deployments in-process with an analytical model: no Hydra job, no MLflow, no files.

For benchmarks (benchmarks/tuning_efficiency.py) and tests that need thousands of evaluations.
This is not a multirun path: recorded sweeps, in-process ones included, go through
:func:`dabench.pipeline.grid.run_grid` (``python -m dabench grid`` and
``hydra/launcher=dabench_inprocess``). A deployment is a dict of overrides, as the search spaces
produce; the objective is the same one the task function returns: ``throughput.samples_per_s``
from the pipeline's predict-only core (:func:`dabench.pipeline.execute.predict_config`), or
failure with the run's status when the model refuses (capacity, unsupported, invalid config).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Mapping

from dabench.config.build import build_run_config
from dabench.core.status import DabenchError, Status
from dabench.pipeline.execute import predict_config
from dabench.tune.driver import Outcome
from dabench.workload.opgraph import build_opgraph

GroupLoader = Callable[[str, str], dict]


def apply_overrides(config: dict, overrides: Mapping[str, Any], load_group: GroupLoader) -> dict:
    """A deep copy of ``config`` with ``overrides`` applied: ``a.b.c`` sets a nested value (a
    leading ``+``/``++`` is ignored); a bare group name with a string value (``precision``)
    swaps in that group's section, loaded with ``load_group(group, choice)``."""
    out = copy.deepcopy(config)
    for key, value in overrides.items():
        key = key.lstrip("+")
        if "." not in key and isinstance(out.get(key), dict) and isinstance(value, str):
            out[key] = copy.deepcopy(load_group(key, value))
            continue
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


class DirectEvaluator:
    """Predicts deployments of ``base`` (a composed task config as a dict). Op graphs are cached
    per (model, micro-batch, precision)."""

    def __init__(self, base: dict, load_group: GroupLoader):
        self.base, self.load_group = base, load_group
        self._graphs: dict[tuple, Any] = {}
        self.evaluations = 0

    def __call__(self, overrides: Mapping[str, Any]) -> Outcome:
        self.evaluations += 1
        try:
            rc = build_run_config(apply_overrides(self.base, overrides, self.load_group))
            key = (rc.model, rc.run.batch_size, rc.precision)
            graph = self._graphs.get(key)
            if graph is None:
                graph = self._graphs[key] = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
            metrics = predict_config(rc, graph).metrics
        except DabenchError as error:
            return Outcome(None, error.status.value, error.reason, mode="predict")
        return Outcome(metrics["throughput.samples_per_s"], Status.OK.value, mode="predict")
