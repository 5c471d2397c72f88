"""A study never evaluates a deployment twice: re-draws, exhaustion, resumes, other workers."""

import optuna
import pytest
from optuna.trial import TrialState

from dabench.tune.dedup import NotEnumerable, deployment_key, enumerate_deployments
from dabench.tune.driver import Outcome, TrialSpace, run_trials
from dabench.tune.sampling import make_sampler
from dabench.tune.space import parse_overrides
from dabench.tune.study import OVERRIDES_ATTR, STATUS_ATTR, counts_toward_budget, mark_owner, open_study

optuna.logging.set_verbosity(optuna.logging.WARNING)


class AliasingHook:
    """Two Optuna parameters, but ``detail`` only matters when ``mode`` is b: (a, x) and (a, y)
    are one deployment. 3 deployments in all."""

    def suggest(self, trial):
        mode = trial.suggest_categorical("mode", ["a", "b"])
        detail = trial.suggest_categorical("detail", ["x", "y"])
        return {"+hardware.options.mode": mode, **({"+hardware.options.detail": detail} if mode == "b" else {})}


class RoundedHook:
    """A continuous parameter rounded to one of 2 values: not enumerable, 2 deployments."""

    def suggest(self, trial):
        return {"+hardware.options.level": round(trial.suggest_float("level", 0.0, 1.0))}


def launch_ok(log):
    def launch(job_overrides, first_index):
        log.extend(job_overrides)
        return [Outcome(1.0 + i, "ok", mode="predict") for i, _ in enumerate(job_overrides)]

    return launch


def study_in(tmp_path, seed=0, sampler="tpe", name="dedup"):
    return open_study(name, f"sqlite:///{tmp_path / 'optuna.db'}", "maximize", make_sampler(sampler, seed))


def counted_keys(study):
    return [deployment_key(t.user_attrs[OVERRIDES_ATTR]) for t in study.get_trials() if counts_toward_budget(t)]


def test_the_deployment_is_the_override_set_not_the_parameters(tmp_path, caplog):
    space = TrialSpace(parse_overrides(["run.batch_size=choice(1, 2)"]), AliasingHook())
    log = []
    study = study_in(tmp_path)
    assert run_trials(study, space, n_trials=20, n_jobs=2, launch=launch_ok(log)) == 6
    keys = counted_keys(study)
    assert len(keys) == len(set(keys)) == 6 and len({deployment_key(o[:-2]) for o in log}) == 6
    assert "study dedup: all 6 deployments of this space evaluated; stopping after 6 trials" in caplog.text
    skipped = [t for t in study.get_trials() if t.user_attrs.get(STATUS_ATTR) == "skipped"]
    assert all(t.state == TrialState.FAIL and not counts_toward_budget(t) for t in skipped)


def test_a_resumed_study_does_not_repeat_its_deployments(tmp_path):
    space = TrialSpace(parse_overrides(["run.batch_size=choice(1, 2, 4, 8)", "precision=fp16,fp32,bf16"]))
    run_trials(study_in(tmp_path), space, n_trials=5, n_jobs=1, launch=launch_ok([]))
    log = []
    study = study_in(tmp_path)  # the same seed replays the first run's proposals: all re-drawn
    assert run_trials(study, space, n_trials=10, n_jobs=2, launch=launch_ok(log)) == 5
    keys = counted_keys(study)
    assert len(keys) == len(set(keys)) == 10


def test_a_deployment_running_on_another_worker_is_not_proposed(tmp_path):
    space = TrialSpace(parse_overrides(["run.batch_size=choice(1, 2)"]))
    study = study_in(tmp_path)
    other = study.ask({"run.batch_size": optuna.distributions.CategoricalDistribution([1, 2])})
    mark_owner(other)  # a live owner: this process (another worker, as far as the study can tell)
    other.set_user_attr(OVERRIDES_ATTR, [f"run.batch_size={other.params['run.batch_size']}"])
    log = []
    assert (
        run_trials(study, space, n_trials=2, n_jobs=1, launch=launch_ok(log), poll_s=0.01, stop=lambda s: bool(log))
        == 1
    )
    assert log[0][0] != f"run.batch_size={other.params['run.batch_size']}"


def test_a_space_that_cannot_be_enumerated_stops_when_no_new_deployment_is_found(tmp_path, caplog):
    space = TrialSpace(parse_overrides([]), RoundedHook())
    study = study_in(tmp_path, sampler="random")
    assert run_trials(study, space, n_trials=10, n_jobs=1, launch=launch_ok([])) == 2
    assert len(set(counted_keys(study))) == 2
    assert "study dedup: no deployment it has not evaluated in 50 proposals; stopping after 2 trials" in caplog.text


def test_enumeration_walks_every_suggest_call():
    space = TrialSpace(parse_overrides(["run.batch_size=range(1, 4)", "precision=fp16,fp32"]), AliasingHook())
    found = enumerate_deployments(space.suggest, space.overrides)
    assert len(found) == 3 * 2 * 3
    for key, params in found.items():
        assert deployment_key(space.overrides_of_params(params)) == key
    with pytest.raises(NotEnumerable):
        enumerate_deployments(TrialSpace(parse_overrides(["run.lr=interval(0.1, 1.0)"])).suggest, space.overrides)
    with pytest.raises(NotEnumerable):
        enumerate_deployments(space.suggest, space.overrides, limit=5)
