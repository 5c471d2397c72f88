"""Persistent, resumable Optuna studies: storage, names, trial bookkeeping (owners, heartbeats,
stale and interrupted trials, counts). ``n_trials`` is the study's total: a trial counts once it
has an outcome; interrupted ones do not. Rules: docs/tuning.md, "Storage, names, resuming".
"""

from __future__ import annotations

import datetime
import hashlib
import os
import socket
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

import optuna
from optuna.storages._heartbeat import is_heartbeat_enabled
from optuna.trial import FrozenTrial, TrialState

from dabench.core import status as run_status
from dabench.core.status import Status
from dabench.runtime.pids import pid_alive, start_ticks
from dabench.runtime.sinks import fault_point, make_dir
from dabench.tune.locking import study_lock

STATUS_ATTR = "dabench.status"
REASON_ATTR = "dabench.reason"
OVERRIDES_ATTR = "dabench.overrides"
MODE_ATTR = "dabench.mode"
HOST_ATTR = "dabench.host"  #: read from trials of older versions (owner in two writes)
PID_ATTR = "dabench.pid"
OWNER_ATTR = "dabench.owner"  #: {"host", "pid", "start"}: written in one storage write
RETRY_OF_ATTR = "dabench.retry_of"  #: an enqueued re-try of an interrupted trial's settings
#: task overrides that do not change what a trial runs, left out of the derived study name
NAME_NEUTRAL_PREFIXES = ("tracking.", "+tracking.", "++tracking.", "hydra.", "+sweeps=", "sweeps=")


def default_storage(launch_dir: Path) -> str:
    store = make_dir("study_storage", launch_dir / "mlruns")
    return f"sqlite:///{(store / 'optuna.db').resolve()}"


def derive_study_name(sweep_name: str | None, model_name: str | None, task_overrides: Sequence[str]) -> str:
    """``<sweep>-<model>[-<hash of the other task overrides>]`` (see module docstring)."""
    others = sorted(
        o for o in task_overrides if not o.startswith(NAME_NEUTRAL_PREFIXES) and not o.startswith(("model=", "+model="))
    )
    name = f"{sweep_name or 'dabench'}-{model_name or 'model'}"
    if others:
        name += "-" + hashlib.sha1("\n".join(others).encode()).hexdigest()[:8]
    return name


def open_study(name: str, storage: str, direction: str, sampler: optuna.samplers.BaseSampler) -> optuna.Study:
    """Create the study or load it when it exists (``load_if_exists``: re-running resumes).

    Workers started at the same moment on a fresh store create the schema and the study one at
    a time, under the store's lock (:func:`dabench.tune.locking.study_lock`); a worker that still
    meets a creation race (a store without a lock) retries a few times."""

    fault_point("study_storage", storage)  # tests: the storage fails as the study is opened
    last: Exception | None = None
    for attempt in range(5):
        try:
            with study_lock(storage, "dabench-schema"):
                with warnings.catch_warnings():  # heartbeats are marked experimental in Optuna
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    store = (
                        optuna.storages.RDBStorage(storage, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S)
                        if "://" in storage
                        else storage
                    )
                return optuna.create_study(
                    study_name=name, storage=store, direction=direction, sampler=sampler, load_if_exists=True
                )
        except (TimeoutError, ValueError, TypeError):
            raise
        except Exception as error:  # e.g. UniqueViolation while another process creates the schema
            last = error
            time.sleep(0.2 * (attempt + 1))
    raise RuntimeError(f"could not open study {name!r}: {last}") from last


def counts_toward_budget(trial: FrozenTrial) -> bool:
    return trial.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
        trial.state == TrialState.FAIL and run_status.counts_toward_budget(trial.user_attrs.get(STATUS_ATTR))
    )


def fresh_trials(study: optuna.Study) -> list[FrozenTrial]:
    """Every trial as the storage holds it now, read past Optuna's per-process trial cache (which
    can miss another worker's trial once this worker finished a later-numbered one)."""
    backend = getattr(study._storage, "_backend", study._storage)  # a cached storage's own store
    return backend.get_all_trials(study._study_id, deepcopy=False)


def trials_done(study: optuna.Study) -> int:
    return sum(counts_toward_budget(t) for t in study.get_trials(deepcopy=False))


def mark_owner(trial: optuna.Trial) -> None:
    """Record which process runs the trial (host, pid and start time, so a reused pid is not taken
    for it) in one storage write, so a later run can tell a stale one; and its first heartbeat."""
    trial.set_user_attr(
        OWNER_ATTR, {"host": socket.gethostname(), "pid": os.getpid(), "start": start_ticks(os.getpid())}
    )
    beat(trial.study, [trial])


def beat(study: optuna.Study, trials: Sequence[Any]) -> None:
    """Record a heartbeat for each of ``trials`` (nothing when the storage keeps none)."""
    if is_heartbeat_enabled(study._storage):
        for trial in trials:
            study._storage.record_heartbeat(trial._trial_id)


def trial_owner(trial: FrozenTrial) -> dict[str, Any] | None:
    """The trial's owner ({"host", "pid", "start"}), from one attribute or the older two."""
    found = trial.user_attrs.get(OWNER_ATTR)
    if isinstance(found, dict):
        return found
    if HOST_ATTR in trial.user_attrs:
        return {"host": trial.user_attrs.get(HOST_ATTR), "pid": trial.user_attrs.get(PID_ATTR), "start": None}
    return None


def owner_gone(found: dict[str, Any] | None) -> bool:
    """True when ``found`` names a process of this host that no longer runs."""
    if not found or found.get("host") != socket.gethostname():
        return False
    pid, start = found.get("pid"), found.get("start")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    return not (pid_alive(pid) and (start is None or start_ticks(pid) in (None, start)))


#: a RUNNING trial with no owner and no parameters older than this was cut off inside ask()
ORPHAN_GRACE_S = 600.0
#: a worker records a heartbeat of its trials in flight every HEARTBEAT_S seconds; a RUNNING
#: trial whose last heartbeat is older than GRACE_S (its worker's machine vanished) is failed
HEARTBEAT_S = 20
GRACE_S = 180
# dabench records heartbeats itself around ask/tell (dabench.tune.driver), not only in optimize()
warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")


def fail_stale_trials(study: optuna.Study, locked: bool = False) -> list[int]:
    """Mark failed (status ``interrupted``, not counted) the RUNNING trials whose launching
    process, on this host, is gone (a killed sweep), and those a sweep was interrupted while
    creating (no owner: started over ``ORPHAN_GRACE_S`` ago, or at once when the caller holds the
    study lock, inside which dabench creates a trial and writes its owner). The settings of each
    are enqueued to run again. Trials run by live processes or other hosts are left alone.
    Returns their numbers."""
    stale = []
    now = datetime.datetime.now()
    storage = study._storage  # trials whose heartbeat stopped (Optuna's RDB heartbeat table)
    silent = set(storage._get_stale_trial_ids(study._study_id)) if is_heartbeat_enabled(storage) else set()
    for trial in [t for t in fresh_trials(study) if t.state == TrialState.RUNNING]:
        found = trial_owner(trial)
        orphan = (
            found is None
            and not trial.params
            and trial.datetime_start is not None
            and (locked or (now - trial.datetime_start).total_seconds() > ORPHAN_GRACE_S)
        )
        if owner_gone(found) or orphan or trial._trial_id in silent:
            pid = (found or {}).get("pid")
            why = (
                f"the sweep process {pid} ended before the trial did"
                if owner_gone(found)
                else f"no heartbeat from {found.get('host')}:{pid} for over {GRACE_S} s"
                if found and not orphan
                else "created but never given an owner"
            )
            _interrupt(study, trial, why)
            stale.append(trial.number)
    return stale


def _interrupt(study: optuna.Study, trial: FrozenTrial | optuna.Trial, why: str) -> None:
    """Tell a RUNNING trial failed with status ``interrupted`` and enqueue its parameters, so the
    next ask (by any worker) runs them again."""
    for key, text in ((STATUS_ATTR, Status.INTERRUPTED.value), (REASON_ATTR, why[:500])):
        study._storage.set_trial_user_attr(trial._trial_id, key, text)
    study.tell(trial.number, state=TrialState.FAIL)
    if trial.params:
        study.enqueue_trial(dict(trial.params), user_attrs={RETRY_OF_ATTR: trial.number})


def fail_interrupted(study: optuna.Study, trials: Sequence[optuna.Trial], why: str) -> None:
    """Tell still-running ``trials`` failed with status ``interrupted``."""
    for trial in trials:
        try:
            if study._storage.get_trial(trial._trial_id).state == TrialState.RUNNING:
                _interrupt(study, trial, why)
        except Exception:  # best effort while unwinding
            pass
