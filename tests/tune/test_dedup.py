"""A study never evaluates a deployment twice: re-draws, exhaustion, resumes, other workers."""

import optuna
import pytest
from optuna.trial import TrialState

from dabench.platforms.ipu.space import IpuPipelineSpace
from dabench.tune.dedup import UNENUMERABLE_DRAWS, NotEnumerable, deployment_key, walk_params
from dabench.tune.driver import TrialSpace, run_trials
from dabench.tune.outcome import JobOutcome
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
        return [JobOutcome(1.0 + i, "ok", mode="predict") for i, _ in enumerate(job_overrides)]

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
    assert (
        f"study dedup: no deployment it has not evaluated in {UNENUMERABLE_DRAWS} random draws "
        "(a space that cannot be enumerated); stopping after 2 trials" in caplog.text
    )


def test_enumeration_walks_every_suggest_call():
    space = TrialSpace(parse_overrides(["run.batch_size=range(1, 4)", "precision=fp16,fp32"]), AliasingHook())
    found = {deployment_key(space.overrides_of_params(p)): p for p in space.each_params()}
    assert len(found) == 3 * 2 * 3
    with pytest.raises(NotEnumerable):
        list(walk_params(TrialSpace(parse_overrides(["run.lr=interval(0.1, 1.0)"])).suggest))


def ipu_space(n_layers, params=("run.batch_size=choice(1, 2, 4)", "precision=choice(fp16, fp32, mixed)"), **args):
    return TrialSpace(parse_overrides(list(params)), IpuPipelineSpace({"model": {"n_layers": n_layers}}, **args))


@pytest.mark.parametrize("n_layers", [4, 12])
def test_a_hook_with_continuous_parameters_enumerates_through_params_of(n_layers):
    hook = ipu_space(n_layers).structured
    deployments = list(hook.grid())
    assert len(deployments) == hook.size()
    for deployment in deployments:
        assert hook.suggest(optuna.trial.FixedTrial(hook.params_of(deployment))) == deployment


def peaked(log):
    """Samples/s highest at batch 4, fp16, 4 IPUs: TPE soon proposes the same deployment again."""

    def launch(job_overrides, first_index):
        log.extend(job_overrides)
        out = []
        for overrides in job_overrides:
            text = " ".join(overrides)
            score = 10 * ("run.batch_size=4" in text) + 5 * ("precision=fp16" in text) + 3 * ("degree=4" in text)
            out.append(JobOutcome(float(score + len(text) % 3), "ok", mode="predict"))
        return out

    return launch


def in_memory(name):
    return optuna.create_study(study_name=name, direction="maximize", sampler=make_sampler("tpe", 0))


def test_a_study_runs_its_budget_with_fresh_deployments_until_the_space_is_exhausted(caplog):
    space = ipu_space(4)  # 9 x 120 deployments; the hook samples continuous stage weights
    log = []
    study = in_memory("dedup")
    assert run_trials(study, space, n_trials=150, n_jobs=3, launch=peaked(log)) == 150
    keys = [deployment_key(o) for o in log]
    assert len(keys) == len(set(keys)) == 150 == len(counted_keys(study))
    skipped = [t for t in study.get_trials() if t.user_attrs.get(STATUS_ATTR) == "skipped"]
    assert skipped, "TPE repeated itself: the re-draws were exercised"
    assert "stopping after" not in caplog.text

    small = ipu_space(4, params=("precision=choice(fp16, fp32)",), ipus=[1, 2, 4], pipeline_fill=[1, 2])
    study, log = in_memory("small"), []
    assert run_trials(study, small, n_trials=500, n_jobs=2, launch=peaked(log)) == 2 * small.structured.size()
    assert len({deployment_key(o) for o in log}) == len(log) == 2 * small.structured.size()
    assert f"study small: all {len(log)} deployments of this space evaluated" in caplog.text
