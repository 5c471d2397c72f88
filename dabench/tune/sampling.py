"""Optuna samplers by name (:func:`make_sampler`); TPE (:class:`FailureAwareSampler`) sees each
failed trial with a run status as a constraint violation (an infeasible point, in memory only; the
stored trial stays FAILED). Why: docs/tuning.md, "What a trial is, and what a failed one does".
"""

from __future__ import annotations

from typing import Any, Mapping

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, TPESampler
from optuna.trial import FrozenTrial, TrialState

from dabench.core import status as run_status
from dabench.core.status import ConfigError
from dabench.tune.study import STATUS_ATTR

#: sampler names accepted in ``hydra.sweeper.sampler`` -> optuna.samplers class
SAMPLERS = {
    "tpe": "TPESampler",
    "random": "RandomSampler",
    "gp": "GPSampler",
    "cmaes": "CmaEsSampler",
    "qmc": "QMCSampler",
    "nsgaii": "NSGAIISampler",
    "bruteforce": "BruteForceSampler",
}
FAILED_CONSTRAINT = "constraints:dabench.failed"


def is_infeasible(trial: FrozenTrial) -> bool:
    """A failed trial that ran and was refused (a recorded status that counts toward the budget,
    see dabench/core/status.py: not ``interrupted``, ``killed``, ...)."""
    status = trial.user_attrs.get(STATUS_ATTR)
    return (
        trial.state == TrialState.FAIL
        and bool(trial.params)
        and status is not None
        and run_status.counts_toward_budget(status)
    )


def _as_infeasible(trial: FrozenTrial, value: float) -> FrozenTrial:
    """An in-memory copy of a failed trial, shown complete with a violated constraint. ``value``
    fills Optuna's required field; TPE ranks infeasible trials by their violation, never by it."""
    return FrozenTrial(
        number=trial.number,
        state=TrialState.COMPLETE,
        value=None,
        values=[value],
        datetime_start=trial.datetime_start,
        datetime_complete=trial.datetime_complete,
        params=trial.params,
        distributions=trial.distributions,
        user_attrs=trial.user_attrs,
        system_attrs={**trial.system_attrs, FAILED_CONSTRAINT: 1.0},
        intermediate_values=trial.intermediate_values,
        trial_id=trial._trial_id,
    )


class _FailedAsInfeasibleView:
    """A read-only stand-in for the study, handed to TPE's sampling only."""

    def __init__(self, study: optuna.Study):
        self._study = study

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def _get_trials(self, deepcopy: bool = True, states=None, use_cache: bool = False) -> list[FrozenTrial]:
        trials = self._study._get_trials(deepcopy=deepcopy, states=None, use_cache=use_cache)
        complete = [t.values[0] for t in trials if t.state == TrialState.COMPLETE and t.values]
        filler = min(complete) if complete else 0.0
        shown = [_as_infeasible(t, filler) if is_infeasible(t) else t for t in trials]
        return [t for t in shown if states is None or t.state in states]


class FailureAwareSampler(TPESampler):
    """A TPESampler that is shown failed trials as infeasible ones."""

    def infer_relative_search_space(self, study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return super().infer_relative_search_space(_FailedAsInfeasibleView(study), trial)

    def sample_relative(self, study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return super().sample_relative(_FailedAsInfeasibleView(study), trial, search_space)

    def sample_independent(
        self, study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return super().sample_independent(_FailedAsInfeasibleView(study), trial, param_name, param_distribution)


def make_sampler(
    name: str, seed: int | None = None, options: Mapping[str, Any] | None = None, failed_as_infeasible: bool = True
) -> BaseSampler:
    """``optuna.samplers.<SAMPLERS[name]>(seed=seed, **options)``; TPE is a
    :class:`FailureAwareSampler` unless ``failed_as_infeasible`` is false."""
    if name not in SAMPLERS:
        raise ConfigError("hydra.sweeper.sampler", name, f"one of {', '.join(SAMPLERS)}")
    aware = name == "tpe" and failed_as_infeasible
    cls = FailureAwareSampler if aware else getattr(optuna.samplers, SAMPLERS[name])
    kwargs = dict(options or {})
    if seed is not None:
        kwargs["seed"] = seed
    try:
        return cls(**kwargs)
    except TypeError as error:
        raise ConfigError(
            "hydra.sweeper.sampler_options",
            dict(options or {}),
            f"arguments of optuna.samplers.{SAMPLERS[name]} ({error})",
        ) from error
