"""The ask/tell loop of a deployment study, independent of how trials are launched.

Each round asks ``n_jobs`` trials, turns each into a list of override strings (fixed overrides,
then the searched values, then ``++tracking.tags.optuna_trial=<n>`` and
``++tracking.tags.optuna_study=<name>`` so every trial's MLflow run carries its number), hands
the batch to ``launch`` (the Hydra sweeper passes its configured launcher; the tuning benchmark
calls the predictor directly) and tells Optuna each outcome:

- a finite objective -> COMPLETE with that value;
- anything else (NaN from a run that ended capacity/oom/invalid_config/..., a job that raised)
  -> FAIL, with the run's ``dabench.status`` and ``dabench.reason`` as trial user attributes.

Interrupts (Ctrl-C) or errors while a batch runs mark its trials failed with status
``interrupted`` (not counted toward ``n_trials``) and re-raise.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import optuna
from optuna.trial import TrialState

from dabench.status import ConfigError, Status
from dabench.tune.space import ParsedSpace, override_value
from dabench.tune.structured import StructuredSpace
from dabench.tune.study import (
    MODE_ATTR,
    OVERRIDES_ATTR,
    REASON_ATTR,
    STATUS_ATTR,
    fail_interrupted,
    mark_owner,
    trials_done,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What one launched trial gave back: ``value`` (None or NaN when the run was not ok), the
    run's ``status`` and ``reason``, and where its job ran."""

    value: float | None
    status: str
    reason: str = ""
    job_dir: str | None = None
    mode: str | None = None  #: measure, predict or validate, as the run reported


@dataclass
class TrialSpace:
    """The whole search space of a study: fixed overrides, grammar dimensions, a structured
    hook. ``suggest`` returns {override key: value} of one deployment."""

    parsed: ParsedSpace
    structured: StructuredSpace | None = None

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        values = self.parsed.suggest(trial)
        if self.structured is not None:
            extra = self.structured.suggest(trial)
            clash = sorted(set(values) & set(extra))
            if clash:
                raise ConfigError("hydra.sweeper.params", clash, "keys set by the structured space hook cannot also be listed in params")
            values.update(extra)
        return values

    def overrides(self, values: dict[str, Any]) -> list[str]:
        return [*self.parsed.fixed, *(f"{key}={override_value(value)}" for key, value in values.items())]


def trial_tags(trial_number: int, study_name: str) -> list[str]:
    return [f"++tracking.tags.optuna_trial={trial_number}",
            f"++tracking.tags.optuna_study={override_value(study_name)}"]


def tell(study: optuna.Study, trial: optuna.Trial, outcome: Outcome) -> TrialState:
    """Record ``outcome`` for ``trial``; see the module docstring for the rule."""
    value = outcome.value
    finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    trial.set_user_attr(STATUS_ATTR, outcome.status if not finite else Status.OK.value)
    if outcome.reason:
        trial.set_user_attr(REASON_ATTR, outcome.reason[:500])
    if outcome.job_dir:
        trial.set_user_attr("dabench.job_dir", outcome.job_dir)
    if outcome.mode:
        trial.set_user_attr(MODE_ATTR, outcome.mode)
    if finite:
        study.tell(trial, float(value))
        return TrialState.COMPLETE
    study.tell(trial, state=TrialState.FAIL)
    return TrialState.FAIL


Launch = Callable[[list[list[str]], int], Sequence[Outcome]]


def run_trials(study: optuna.Study, space: TrialSpace, n_trials: int, n_jobs: int, launch: Launch,
               tag_trials: bool = True, stop: Callable[[optuna.Study], bool] | None = None) -> int:
    """Ask/launch/tell until the study holds ``n_trials`` counted trials (or ``stop(study)`` says
    so after a batch); returns how many trials this call ran. ``launch(job_overrides,
    first_job_index)`` must return one Outcome per job."""
    ran = 0
    while (left := n_trials - trials_done(study)) > 0 and not (stop is not None and stop(study)):
        batch: list[optuna.Trial] = []
        try:
            job_overrides = []
            for _ in range(min(n_jobs, left)):
                trial = study.ask()
                batch.append(trial)
                mark_owner(trial)
                overrides = space.overrides(space.suggest(trial))
                trial.set_user_attr(OVERRIDES_ATTR, overrides)
                job_overrides.append(overrides + (trial_tags(trial.number, study.study_name) if tag_trials else []))
            outcomes = list(launch(job_overrides, batch[0].number))
            if len(outcomes) != len(batch):
                raise RuntimeError(f"launcher returned {len(outcomes)} results for {len(batch)} jobs")
        except BaseException as error:
            fail_interrupted(study, batch, f"{type(error).__name__} while the batch ran: {error}")
            raise
        for trial, outcome in zip(batch, outcomes):
            state = tell(study, trial, outcome)
            ran += 1
            log.info("trial %d: %s %s", trial.number, state.name.lower(),
                     f"{outcome.value:,.2f}" if state == TrialState.COMPLETE else f"({outcome.status}: {outcome.reason.splitlines()[0] if outcome.reason else ''})")
    return ran
