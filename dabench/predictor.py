"""The one in-process predictor: a composed config (or its RunConfig) -> op graph -> ceilings ->
the platform's analytical model -> Tier-1/2 metrics, held to the result check; :func:`band` gives
each banded number's interval from the run's constant set.

The pipeline, advise, the tuner's direct evaluator, fit and findings all predict through
:func:`predict`. :func:`opgraph` is the one op graph cache (per model, micro-batch and precision;
its users never change a graph). Raises DabenchError when the configuration or the model refuses
(capacity, unsupported, invalid config), Diverged or InvalidResult when a prediction breaks a bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from dabench.config.build import build_run_config
from dabench.config.sections import ModelConfig, PrecisionConfig, RunConfig
from dabench.core.ceilings import Ceilings
from dabench.core.profile import Profile
from dabench.core.status import Diverged, InvalidResult, Status
from dabench.host.ceilings import resolve_ceilings
from dabench.metrics.checks import check_result
from dabench.metrics.summary import compute_metrics
from dabench.perfmodel import get_predictor
from dabench.perfmodel.constants import band_metrics, resolve
from dabench.perfmodel.reach import coords
from dabench.workload.opgraph import OpGraph, build_opgraph


@dataclass
class Prediction:
    """What :func:`predict` hands on."""

    rc: RunConfig
    profile: Profile
    graph: OpGraph
    ceilings: Ceilings  #: what the metrics are taken against
    metrics: dict[str, float]


@lru_cache(maxsize=1024)
def _opgraph(model: ModelConfig, batch_size: int, precision: PrecisionConfig) -> OpGraph:
    return build_opgraph(model, batch_size, precision)


def opgraph(rc: RunConfig) -> OpGraph:
    """The op graph of ``rc`` (shared: never change it)."""
    return _opgraph(rc.model, rc.run.batch_size, rc.precision)


def predict(
    config: RunConfig | Mapping[str, Any],
    ceilings: Ceilings | None = None,
    model_ceilings: Ceilings | None = None,
    check: bool = True,
) -> Prediction:
    """Predict ``config`` (a RunConfig or a composed mapping) against ``ceilings`` (default: the
    spec's, or this CPU's calibration), the model pricing the ops at ``model_ceilings`` (default
    ``ceilings``). ``check=False`` only for the pipeline, which checks the whole result itself."""
    rc = config if isinstance(config, RunConfig) else build_run_config(config)
    graph = opgraph(rc)
    if ceilings is None:
        ceilings = resolve_ceilings(rc.hardware, rc.precision)
    profile = get_predictor(rc.hardware.arch)(rc, graph, ceilings if model_ceilings is None else model_ceilings)
    metrics = compute_metrics(profile, graph, ceilings, rc.data_copies)
    failure = check_result(metrics) if check else None
    if failure is not None:
        raise (Diverged if failure.status is Status.DIVERGED else InvalidResult)(failure.reason)
    return Prediction(rc, profile, graph, ceilings, metrics)


def band(rc: RunConfig, metrics: Mapping[str, float]) -> dict[str, float]:
    """``<name>.lo`` / ``.hi`` of each banded number of ``metrics`` (``predict.<name>`` beside a
    measurement) from ``hardware.constants``, widened by the configuration's reach."""
    return band_metrics(rc.hardware.arch, metrics, resolve(rc.hardware.constants), coords(rc), rc.band.nominal)
