"""Persistent, resumable Optuna studies: storage, names, trial bookkeeping.

- Storage: ``hydra.sweeper.storage`` (any SQLAlchemy URL, e.g. ``postgresql://...`` for a study
  shared by several machines), else ``sqlite:///<launch dir>/mlruns/optuna.db`` (absolute: Hydra
  changes the working directory per job; a separate file from MLflow's ``mlflow.db``).
- Name: ``hydra.sweeper.study_name``, else ``<sweep>-<model>`` plus, when the command has other
  task overrides, ``-<8 hex digits>`` of a hash of them: the same command resumes the same study,
  a different space or model starts a different one.
- Budget: ``n_trials`` is the study's total. A trial counts once it has an outcome (complete, or
  failed with a run status); trials cut short by an interrupt are marked failed with status
  ``interrupted`` and do not count, so re-running the command runs only the missing ones.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import socket
from pathlib import Path
from typing import Any, Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState

from dabench import status as run_status
from dabench.status import Status

STATUS_ATTR = "dabench.status"
REASON_ATTR = "dabench.reason"
OVERRIDES_ATTR = "dabench.overrides"
MODE_ATTR = "dabench.mode"
HOST_ATTR = "dabench.host"
PID_ATTR = "dabench.pid"
INTERRUPTED = Status.INTERRUPTED.value
#: task overrides that do not change what a trial runs, left out of the derived study name
NAME_NEUTRAL_PREFIXES = ("tracking.", "+tracking.", "++tracking.", "hydra.", "+sweeps=", "sweeps=")


def default_storage(launch_dir: Path) -> str:
    store = launch_dir / "mlruns"
    store.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(store / 'optuna.db').resolve()}"


def derive_study_name(sweep_name: str | None, model_name: str | None, task_overrides: Sequence[str]) -> str:
    """``<sweep>-<model>[-<hash of the other task overrides>]`` (see module docstring)."""
    others = sorted(o for o in task_overrides
                    if not o.startswith(NAME_NEUTRAL_PREFIXES) and not o.startswith(("model=", "+model=")))
    name = f"{sweep_name or 'dabench'}-{model_name or 'model'}"
    if others:
        name += "-" + hashlib.sha1("\n".join(others).encode()).hexdigest()[:8]
    return name


def open_study(name: str, storage: str, direction: str, sampler: optuna.samplers.BaseSampler) -> optuna.Study:
    """Create the study or load it when it exists (``load_if_exists``: re-running resumes)."""
    return optuna.create_study(study_name=name, storage=storage, direction=direction, sampler=sampler,
                               load_if_exists=True)


def counts_toward_budget(trial: FrozenTrial) -> bool:
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        return True
    return trial.state == TrialState.FAIL and run_status.counts_toward_budget(trial.user_attrs.get(STATUS_ATTR))


def trials_done(study: optuna.Study) -> int:
    return sum(counts_toward_budget(t) for t in study.get_trials(deepcopy=False))


def mark_owner(trial: optuna.Trial) -> None:
    """Record which process runs the trial, so a later run can tell a stale one."""
    trial.set_user_attr(HOST_ATTR, socket.gethostname())
    trial.set_user_attr(PID_ATTR, os.getpid())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: a RUNNING trial with no owner and no parameters older than this was cut off inside ask()
ORPHAN_GRACE_S = 600.0


def fail_stale_trials(study: optuna.Study) -> list[int]:
    """Mark failed (status ``interrupted``) the RUNNING trials whose launching process, on this
    host, is gone (a killed sweep), and those a sweep was interrupted while creating (no owner,
    no parameters, started over ``ORPHAN_GRACE_S`` ago). Trials run by live processes or other
    hosts are left alone. Returns their numbers."""
    host, stale = socket.gethostname(), []
    now = datetime.datetime.now()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        pid = trial.user_attrs.get(PID_ATTR)
        dead_owner = trial.user_attrs.get(HOST_ATTR) == host and isinstance(pid, int) and pid != os.getpid() and not _alive(pid)
        orphan = (HOST_ATTR not in trial.user_attrs and not trial.params and trial.datetime_start is not None
                  and (now - trial.datetime_start).total_seconds() > ORPHAN_GRACE_S)
        if dead_owner or orphan:
            study._storage.set_trial_user_attr(trial._trial_id, STATUS_ATTR, INTERRUPTED)
            study._storage.set_trial_user_attr(trial._trial_id, REASON_ATTR, f"the sweep process {pid} ended before the trial did")
            study.tell(trial.number, state=TrialState.FAIL)
            stale.append(trial.number)
    return stale


def fail_interrupted(study: optuna.Study, trials: Sequence[optuna.Trial], why: str) -> None:
    """Tell still-running ``trials`` failed with status ``interrupted``."""
    for trial in trials:
        try:
            if study._storage.get_trial(trial._trial_id).state != TrialState.RUNNING:
                continue
            trial.set_user_attr(STATUS_ATTR, INTERRUPTED)
            trial.set_user_attr(REASON_ATTR, why[:500])
            study.tell(trial, state=TrialState.FAIL)
        except Exception:  # best effort while unwinding
            pass


def state_counts(study: optuna.Study) -> dict[str, int]:
    """Trials by Optuna state (complete, fail, pruned, running, waiting)."""
    counts: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        counts[trial.state.name.lower()] = counts.get(trial.state.name.lower(), 0) + 1
    return counts


def status_counts(study: optuna.Study) -> dict[str, int]:
    """Finished trials by dabench run status (ok, capacity, oom, invalid_config, ...)."""
    counts: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        if trial.state == TrialState.COMPLETE:
            status = Status.OK.value
        elif trial.state == TrialState.FAIL:
            status = trial.user_attrs.get(STATUS_ATTR, "unknown")
        else:
            continue
        counts[status] = counts.get(status, 0) + 1
    return counts


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return study.best_trial if complete else None


def user_attr(trial: FrozenTrial, name: str, default: Any = None) -> Any:
    return trial.user_attrs.get(name, default)
