"""Several workers on one PostgreSQL study and one mlflow server: exactly n_trials counted
trials, no deployment (override set) evaluated twice, one MLflow parent per study with every
counted trial its child, no orphan and no run left RUNNING; a worker killed mid-trial leaves a failed, not-counted
trial whose settings run
again. Slow: a real PostgreSQL, a real mlflow server, real dabench processes."""

from __future__ import annotations

import os
import signal
import time

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from dabench.tune.dedup import deployment_key
from dabench.tune.study import OVERRIDES_ATTR, RETRY_OF_ATTR, STATUS_ATTR, counts_toward_budget
from tests.scaleout.workers import RDU_STRUCTURED, start_worker, worker_command

#: one xdist group for the modules that use the session's ``stack``: one worker builds it for both
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("scaleout_stack")]
WAIT_S = 1500


def _wait(processes, logs):
    for process, log in zip(processes, logs, strict=False):
        try:
            rc = process.wait(WAIT_S)
        except Exception:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        assert rc == 0, log.read_text()[-4000:]


def _record(server_uri: str, study: optuna.Study):
    """(parents, children, orphans, running) of the study in the tracking server."""
    client = MlflowClient(server_uri)
    experiment = client.get_experiment_by_name("dabench").experiment_id
    runs = client.search_runs([experiment], max_results=5000)
    parents = [
        r
        for r in runs
        if r.data.tags.get("dabench.parent") == "true" and r.data.tags.get("optuna.study") == study.study_name
    ]
    mine = [r for r in runs if r.data.tags.get("optuna_study") == study.study_name]
    parent_ids = {p.info.run_id for p in parents}
    children = [r for r in mine if r.data.tags.get("mlflow.parentRunId") in parent_ids]
    orphans = [r for r in mine if r.data.tags.get("mlflow.parentRunId") not in parent_ids]
    running = [r for r in runs if r.info.status == "RUNNING"]
    return parents, children, orphans, running


def _duplicates(trials) -> int:
    """Trials whose deployment (override set) an earlier trial of the list already had."""
    keys = [deployment_key(t.user_attrs[OVERRIDES_ATTR]) for t in trials]
    return len(keys) - len(set(keys))


def test_four_workers_started_together_share_one_study(stack, tmp_path):
    pg, server = stack
    n = 40
    command = worker_command("four-workers", pg.url("optuna"), server.uri, n, sweep=RDU_STRUCTURED)
    logs = [tmp_path / f"worker{i}.log" for i in range(4)]
    workers = [start_worker(tmp_path, command, log) for log in logs]  # the same moment, one folder
    _wait(workers, logs)

    study = optuna.load_study(study_name="four-workers", storage=pg.url("optuna"))
    trials = study.get_trials()
    counted = [t for t in trials if counts_toward_budget(t)]
    table = "\n".join(
        f"{t.number} {t.state.name} {t.user_attrs.get(STATUS_ATTR)} {t.user_attrs.get('dabench.owner')} "
        f"{t.datetime_start} {t.datetime_complete} {t.system_attrs.get('fixed_params')}"
        for t in trials
    )
    assert len(counted) == n, table
    assert [t.state for t in counted] == [TrialState.COMPLETE] * n
    assert _duplicates(counted) == 0, "a deployment ran twice"
    assert all(
        t.state == TrialState.FAIL and t.user_attrs[STATUS_ATTR] == "skipped"
        for t in trials
        if not counts_toward_budget(t)
    )
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    owners = {t.user_attrs["dabench.owner"]["pid"] for t in counted}
    assert len(owners) > 1, "the workers shared the study"
    job_dirs = [t.user_attrs["dabench.job_dir"] for t in counted]
    assert len(set(job_dirs)) == n, "two trials shared a job folder"
    # outcomes came back through JobReturn: status and mode of every trial
    assert {t.user_attrs["dabench.mode"] for t in counted} == {"predict"}

    parents, children, orphans, running = _record(server.uri, study)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(children) == n and not orphans and not running
    assert sorted(int(r.data.tags["optuna_trial"]) for r in children) == sorted(t.number for t in counted)
    print(
        f"\n4 workers, n_trials={n}: {len(trials)} trials ({len(counted)} counted, {_duplicates(counted)} "
        f"duplicate deployments, {len(trials) - len(counted)} skipped proposals), "
        f"{len(children)} children of 1 parent, "
        f"{len(orphans)} orphans, {len(running)} RUNNING"
    )


def test_a_worker_killed_mid_trial_leaves_a_failed_trial_that_runs_again(stack, tmp_path):
    pg, server = stack
    n = 12
    command = worker_command("killed-worker", pg.url("optuna"), server.uri, n)
    hold = tmp_path / "held_trial"
    # the victim asks its first trial, then stops there until killed (a fault hook, no timing)
    hold_env = {"DABENCH_FAULT": "trial_batch:hold", "DABENCH_FAULT_READY": str(hold)}
    victim = start_worker(tmp_path, command, tmp_path / "victim.log", hold_env)
    deadline = time.monotonic() + WAIT_S
    while not hold.exists():
        assert victim.poll() is None, (tmp_path / "victim.log").read_text()[-4000:]
        assert time.monotonic() < deadline
        time.sleep(0.2)
    storage = optuna.storages.RDBStorage(pg.url("optuna"))
    study = optuna.load_study(study_name="killed-worker", storage=storage)
    held = min(t.number for t in study.get_trials(states=(TrialState.RUNNING,)))
    logs = [tmp_path / f"worker{i}.log" for i in range(3)]
    others = [start_worker(tmp_path, command, log) for log in logs]
    while not study.get_trials(states=(TrialState.COMPLETE,)):  # mid-study: others have results
        assert all(p.poll() in (None, 0) for p in others) and time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()  # reaped: its pid is gone
    _wait(others, logs)

    trials = {t.number: t for t in study.get_trials()}
    killed = trials[held]
    assert killed.state == TrialState.FAIL and killed.user_attrs[STATUS_ATTR] == "interrupted"
    assert not counts_toward_budget(killed)
    again = [t for t in trials.values() if t.user_attrs.get(RETRY_OF_ATTR) == held]
    assert len(again) == 1 and again[0].state == TrialState.COMPLETE and again[0].params == killed.params
    assert sum(counts_toward_budget(t) for t in trials.values()) == n
    assert not [t for t in trials.values() if t.state == TrialState.RUNNING]
    parents, children, orphans, running = _record(server.uri, study)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(children) == n and not orphans and not running
