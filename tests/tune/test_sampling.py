"""Failed trials stay FAILED in storage yet steer TPE away; sampler construction."""

import optuna
import pytest
from optuna.trial import TrialState

from dabench.core.status import ConfigError
from dabench.tune.sampling import FailureAwareSampler, make_sampler
from dabench.tune.study import STATUS_ATTR

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _toy_study(failure_aware: bool, seed: int) -> tuple[int, float, optuna.Study]:
    """x, y in 0..19; every x < 14 is 'infeasible' (70% of the space); objective x + y."""
    study = optuna.create_study(
        direction="maximize", sampler=make_sampler("tpe", seed, failed_as_infeasible=failure_aware)
    )
    failures = 0
    for _ in range(50):
        trial = study.ask()
        x, y = trial.suggest_int("x", 0, 19), trial.suggest_int("y", 0, 19)
        if x < 14:
            trial.set_user_attr(STATUS_ATTR, "capacity")
            study.tell(trial, state=TrialState.FAIL)
            failures += 1
        else:
            study.tell(trial, x + y)
    return failures, study.best_value, study


def test_failed_trials_steer_tpe_away_without_a_stored_score():
    plain = [_toy_study(False, seed)[0] for seed in range(3)]
    aware = [_toy_study(True, seed) for seed in range(3)]
    assert sum(f for f, _, _ in aware) < 0.7 * sum(plain), (plain, [f for f, _, _ in aware])
    for _, _, study in aware:
        failed = study.get_trials(states=(TrialState.FAIL,))
        assert failed and all(t.value is None and t.values is None for t in failed)
        assert all(not t.constraints for t in study.get_trials())  # nothing written to storage


def test_sampler_names():
    assert isinstance(make_sampler("tpe", 1), FailureAwareSampler)
    assert isinstance(make_sampler("tpe", 1, failed_as_infeasible=False), optuna.samplers.TPESampler)
    assert isinstance(make_sampler("random", 1), optuna.samplers.RandomSampler)
    with pytest.raises(ConfigError, match="hydra.sweeper.sampler.*'anneal'.*tpe, random"):
        make_sampler("anneal")
    with pytest.raises(ConfigError, match="sampler_options"):
        make_sampler("random", options={"no_such_option": 1})
