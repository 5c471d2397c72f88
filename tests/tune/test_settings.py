"""Sweeper settings are checked before the study storage is touched; a resumed study keeps its space."""

import optuna
import pytest

from dabench.core.status import ConfigError
from dabench.tune.driver import TrialSpace
from dabench.tune.sampling import make_sampler
from dabench.tune.settings import SPACE_ATTR, SweepSettings, check_resume, check_settings, space_fingerprint
from dabench.tune.space import parse_overrides
from dabench.tune.study import open_study
from tests.conftest import run_dabench

GOOD = dict(
    direction="maximize",
    n_trials=3,
    n_jobs=1,
    seed=None,
    sampler="tpe",
    sampler_options={},
    failed_as_infeasible=True,
    allow_oversubscribe=False,
    allow_space_change=False,
    storage=None,
    study_name=None,
    sweep_name="demo",
)


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("direction", "up", "maximize or minimize"),
        ("n_trials", 0, "a positive integer"),
        ("n_jobs", True, "a positive integer"),
        ("seed", -1, "null or an integer"),
        ("sampler", "bogus", "one of tpe"),
        ("sampler_options", {"n_startup_trials": "x", "bogus": 1}, "arguments of optuna.samplers.TPESampler"),
        ("failed_as_infeasible", "yes", "true or false"),
        ("storage", "nonsense", "an SQLAlchemy URL"),
        ("storage", "redis://u:CANARY123@h/0", "a URL of one of"),
        ("study_name", "", "a non-empty printable name"),
    ],
)
def test_a_bad_setting_names_its_field_value_and_what_is_valid(field, value, says):
    with pytest.raises(ConfigError) as caught:
        check_settings(SweepSettings(**{**GOOD, field: value}))
    text = str(caught.value)
    assert f"hydra.sweeper.{field}=" in text and says in text and "\n" not in text and "CANARY123" not in text


def test_good_settings_give_the_sampler():
    assert isinstance(check_settings(SweepSettings(**GOOD)), optuna.samplers.BaseSampler)


def _fingerprint(*params):
    return space_fingerprint(TrialSpace(parse_overrides(list(params))), None, {})


def test_a_resumed_study_with_another_space_is_refused_unless_allowed(tmp_path):
    study = open_study("s", f"sqlite:///{tmp_path / 'optuna.db'}", "maximize", make_sampler("random", 0))
    first = _fingerprint("run.batch_size=choice(1, 2)", "precision=fp32", "++tracking.uri=sqlite:///x")
    assert check_resume(study, first, allow_change=False) is True  # a new study records its space
    study.set_user_attr(SPACE_ATTR, first)
    assert check_resume(study, _fingerprint("run.batch_size=choice(1, 2)", "precision=fp32"), False) is False
    changed = _fingerprint("run.batch_size=choice(1, 2, 4)", "precision=fp32")
    with pytest.raises(ConfigError) as caught:
        check_resume(study, changed, allow_change=False)
    assert "hydra.sweeper.params='params.run.batch_size'" in str(caught.value)
    assert "allow_space_change=true" in str(caught.value)
    assert check_resume(study, changed, allow_change=True) is True


def _dabench(tmp_path, *args):
    return run_dabench(*args, "-m", cwd=tmp_path, code=None)


def test_the_sweeper_exits_2_with_one_line_and_creates_nothing(tmp_path):
    done = _dabench(tmp_path, "+sweeps=rdu_deploy", "hydra.sweeper.storage=redis://u:CANARY123@h/0")
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        "dabench: invalid config: hydra.sweeper.storage='redis://u:***@h/0': a URL of one of "
        "sqlite, postgresql, postgres, mysql, mariadb, oracle, mssql"
    ]
    assert "CANARY123" not in done.stdout + done.stderr
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "multirun").exists()


@pytest.mark.slow
def test_a_changed_space_on_resume_exits_2_and_writes_nothing(tmp_path):
    base = [
        "+sweeps=rdu_deploy",
        "hydra.sweeper.space.hook=null",
        "hydra.sweeper.study_name=fixed",
        "hydra.sweeper.n_trials=1",
    ]
    assert _dabench(tmp_path, *base, "run.batch_size=choice(4, 8)").returncode == 0
    storage = f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}"
    before = [t.number for t in optuna.load_study(study_name="fixed", storage=storage).trials]
    done = _dabench(tmp_path, *base, "hydra.sweeper.n_trials=2", "run.batch_size=choice(4, 8, 16)")
    assert done.returncode == 2 and "hydra.sweeper.params='params.run.batch_size'" in done.stderr
    assert [t.number for t in optuna.load_study(study_name="fixed", storage=storage).trials] == before
