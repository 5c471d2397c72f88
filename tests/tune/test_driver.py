"""The ask/launch/tell loop: outcomes, failures, interrupts, resume, stale trials."""

import math
import os
import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from dabench.tune.driver import TrialSpace, run_trials
from dabench.tune.outcome import JobOutcome
from dabench.tune.sampling import make_sampler
from dabench.tune.space import parse_overrides
from dabench.tune.study import (
    HOST_ATTR,
    OVERRIDES_ATTR,
    OWNER_ATTR,
    PID_ATTR,
    REASON_ATTR,
    STATUS_ATTR,
    derive_study_name,
    fail_stale_trials,
    mark_owner,
    open_study,
    trials_done,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)
SPACE = TrialSpace(parse_overrides(["+sweeps=demo", "run.batch_size=choice(1, 2, 4, 8)", "precision=fp16,fp32"]))
#: not a finite grid (a continuous dimension): no duplicate is ever skipped, trial numbers are dense
CONTINUOUS = TrialSpace(
    parse_overrides(
        ["+sweeps=demo", "run.batch_size=choice(1, 2, 4, 8)", "precision=fp16,fp32", "run.lr=interval(0.001, 0.01)"]
    )
)


def fake_launch(log):
    """Throughput = batch size; batch 8 'does not fit' (NaN, status capacity)."""

    def launch(job_overrides, first_index):
        log.append((first_index, job_overrides))
        outcomes = []
        for overrides in job_overrides:
            batch = int(next(o for o in overrides if o.startswith("run.batch_size=")).split("=")[1])
            if batch == 8:
                outcomes.append(JobOutcome(math.nan, "capacity", "sram capacity exceeded: needs 2 GiB, has 0.9 GiB"))
            else:
                outcomes.append(JobOutcome(float(batch), "ok", mode="predict"))
        return outcomes

    return launch


def _study(tmp_path, name="demo-tiny", seed=0):
    return open_study(name, f"sqlite:///{tmp_path / 'optuna.db'}", "maximize", make_sampler("tpe", seed))


def test_outcomes_become_complete_or_failed_trials(tmp_path, caplog):
    log = []
    study = _study(tmp_path)
    # 8 deployments in the space: 8 run once each (repeats proposed meanwhile are closed as
    # skipped, never launched), then the study ends early, saying so
    assert run_trials(study, SPACE, n_trials=12, n_jobs=3, launch=fake_launch(log)) == 8
    firsts = [first for first, _ in log]
    assert firsts == sorted(firsts) and firsts[0] == 0 and sum(len(batch) for _, batch in log) == 8
    ran = [t for t in study.get_trials() if t.user_attrs.get(STATUS_ATTR) != "skipped"]
    assert len(ran) == 8 and len({tuple(sorted(t.params.items())) for t in ran}) == 8
    skipped = [t for t in study.get_trials() if t.user_attrs.get(STATUS_ATTR) == "skipped"]
    assert all(t.state == TrialState.FAIL for t in skipped) and trials_done(study) == 8
    assert "study demo-tiny: all 8 deployments of this space evaluated; stopping after 8 trials" in caplog.text
    first = log[0][1][0]
    assert first[0] == "+sweeps=demo"
    assert "++tracking.tags.optuna_trial=0" in first and "++tracking.tags.optuna_study=demo-tiny" in first
    for trial in ran:
        overrides = trial.user_attrs[OVERRIDES_ATTR]
        assert not any(o.startswith("++tracking") for o in overrides)
        if trial.params["run.batch_size"] == 8:
            assert trial.state == TrialState.FAIL and trial.value is None
            assert trial.user_attrs[STATUS_ATTR] == "capacity"
            assert "capacity exceeded" in trial.user_attrs[REASON_ATTR]
        else:
            assert trial.state == TrialState.COMPLETE and trial.value == trial.params["run.batch_size"]
            assert trial.user_attrs[STATUS_ATTR] == "ok"


def test_rerun_resumes_and_numbers_go_on(tmp_path):
    run_trials(_study(tmp_path), CONTINUOUS, n_trials=4, n_jobs=1, launch=fake_launch([]))
    log = []
    study = _study(tmp_path, seed=4)  # as the sweeper does: load_if_exists, seed + trials held
    assert run_trials(study, CONTINUOUS, n_trials=6, n_jobs=1, launch=fake_launch(log)) == 2
    assert [first for first, _ in log] == [4, 5]
    assert [t.number for t in study.get_trials()] == list(range(6))
    assert run_trials(_study(tmp_path), CONTINUOUS, n_trials=6, n_jobs=1, launch=fake_launch([])) == 0


def test_interrupt_marks_the_batch_and_does_not_count(tmp_path):
    study = _study(tmp_path)
    calls = []

    def interrupted(job_overrides, first_index):
        calls.append(first_index)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return fake_launch([])(job_overrides, first_index)

    with pytest.raises(KeyboardInterrupt):
        run_trials(study, CONTINUOUS, n_trials=5, n_jobs=2, launch=interrupted)
    states = [(t.number, t.state, t.user_attrs.get(STATUS_ATTR)) for t in study.get_trials()]
    # the interrupted trials' settings wait (enqueued) to be tried again
    assert states[2:] == [
        (2, TrialState.FAIL, "interrupted"),
        (3, TrialState.FAIL, "interrupted"),
        (4, TrialState.WAITING, None),
        (5, TrialState.WAITING, None),
    ]
    assert trials_done(study) == 2
    log = []
    run_trials(_study(tmp_path, seed=6), CONTINUOUS, n_trials=5, n_jobs=2, launch=fake_launch(log))
    assert [first for first, _ in log] == [4, 6]  # 3 more counted trials: 4, 5 (the retries), 6
    trials = study.get_trials()
    assert trials[4].params == trials[2].params and trials[5].params == trials[3].params
    assert trials_done(study) == 5


def test_stale_running_trials_of_a_dead_sweep_are_failed(tmp_path):
    study = _study(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    import socket

    stale, foreign, mine, legacy = study.ask(), study.ask(), study.ask(), study.ask()
    stale.suggest_int("x", 1, 9)
    stale.set_user_attr(OWNER_ATTR, {"host": socket.gethostname(), "pid": dead_pid, "start": None})
    foreign.set_user_attr(OWNER_ATTR, {"host": "another-host", "pid": dead_pid, "start": None})
    mark_owner(mine)
    legacy.set_user_attr(HOST_ATTR, socket.gethostname())  # owner in two writes (older versions)
    legacy.set_user_attr(PID_ATTR, dead_pid)
    assert fail_stale_trials(study) == [stale.number, legacy.number]
    retry = study.get_trials(states=(TrialState.WAITING,))
    assert [t.system_attrs["fixed_params"] for t in retry] == [{"x": stale.params["x"]}]  # run again
    by_number = {t.number: t for t in study.get_trials()}
    assert by_number[stale.number].state == TrialState.FAIL
    assert by_number[stale.number].user_attrs[STATUS_ATTR] == "interrupted"
    assert by_number[foreign.number].state == TrialState.RUNNING
    assert by_number[mine.number].state == TrialState.RUNNING


def test_study_names():
    assert (
        derive_study_name("ipu_deploy", "gpt2_test", ["+sweeps=ipu_deploy", "model=gpt2_test"])
        == "ipu_deploy-gpt2_test"
    )
    assert (
        derive_study_name("ipu_deploy", "gpt2_test", ["+sweeps=ipu_deploy", "tracking.enabled=false"])
        == "ipu_deploy-gpt2_test"
    )
    a = derive_study_name("ipu_deploy", "gpt2_test", ["model.n_layers=12", "run.seed=1"])
    b = derive_study_name("ipu_deploy", "gpt2_test", ["run.seed=1", "model.n_layers=12"])
    c = derive_study_name("ipu_deploy", "gpt2_test", ["model.n_layers=24"])
    assert a == b != c and a.startswith("ipu_deploy-gpt2_test-") and len(a) == len("ipu_deploy-gpt2_test-") + 8


def test_a_reused_pid_is_not_the_owner(tmp_path):
    """The owner is host, pid and process start time: a live process with the owner's pid but
    another start time does not keep the trial."""
    import socket

    study = _study(tmp_path)
    trial = study.ask()
    trial.set_user_attr(OWNER_ATTR, {"host": socket.gethostname(), "pid": os.getppid(), "start": -1})
    assert fail_stale_trials(study) == [trial.number]


def test_orphan_without_owner_is_failed_at_once_under_the_lock(tmp_path):
    study = _study(tmp_path)
    orphan = study.ask()  # created, then the process died before writing its owner
    assert fail_stale_trials(study) == []  # without the lock: only after a grace period
    assert fail_stale_trials(study, locked=True) == [orphan.number]


def test_a_trial_whose_heartbeat_stopped_is_failed_and_retried(tmp_path, monkeypatch):
    """A worker on another machine that vanished: its pid cannot be checked from here, its
    trial's heartbeat stops; after the grace period the trial is failed and its settings re-run."""
    import time as _time

    from dabench.tune import study as study_module

    monkeypatch.setattr(study_module, "HEARTBEAT_S", 1)
    monkeypatch.setattr(study_module, "GRACE_S", 1)
    study = _study(tmp_path, "heartbeat")
    trial = study.ask()
    trial.suggest_int("x", 1, 9)
    trial.set_user_attr(OWNER_ATTR, {"host": "a-vanished-host", "pid": 1, "start": None})
    study_module.beat(study, [trial])
    assert fail_stale_trials(study) == []  # beating recently
    _time.sleep(2.5)  # past the 1 s grace period: a deadline, not a race
    assert fail_stale_trials(study) == [trial.number]
    failed = study.get_trials(states=(TrialState.FAIL,))[0]
    assert "no heartbeat" in failed.user_attrs[REASON_ATTR]
    assert study.get_trials(states=(TrialState.WAITING,))[0].system_attrs["fixed_params"] == {"x": trial.params["x"]}
