"""The study's MLflow parent run: one per study and tracking store, found or created under the
study store's lock (its id in the study's user attributes), closed by the worker that ends the
study, holding the best trial's tags and metrics, the trial counts and the ``study/`` artifacts.
Details: docs/tuning.md, "MLflow".
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
from pathlib import Path

import optuna
import yaml

from dabench.core.status import Status
from dabench.runtime.sinks import cell, write_text
from dabench.tracking.lifecycle import ParentRun
from dabench.tracking.redact import redact_text, redact_uri, redact_value
from dabench.tracking.store import client_and_experiment
from dabench.tune.best import StudySummary
from dabench.tune.plots import plot_history, plot_importance
from dabench.tune.study import fresh_trials, owner_gone

log = logging.getLogger(__name__)

PARENT_ATTR = "dabench.mlflow_parent_run_id"
PARENT_URI_ATTR = "dabench.mlflow_tracking_uri"
PARENT_OWNER_ATTR = "dabench.mlflow_parent_owner"  #: "host:pid" of the sweep that holds it


def _owner_gone(owner: str | None) -> bool:
    """Whether the sweep ``host:pid`` that holds the parent is a process of this host that no longer runs."""
    host, _, pid = (owner or "").rpartition(":")
    return pid.isdigit() and owner_gone({"host": host, "pid": int(pid)})


def study_parent(study: optuna.Study, uri: str, experiment: str, storage: str, lock) -> ParentRun:
    """The study's parent run in the tracking store ``uri``: adopted from the study's user
    attributes, else opened, while ``lock()`` (the study store's lock) is held so that workers
    starting together open one. A parent that an earlier invocation closed is RUNNING again."""

    client, _ = client_and_experiment(uri, experiment)
    with lock():
        attrs = study._storage.get_study_user_attrs(study._study_id)
        # the recorded tracking URI is masked (unmasked by older versions)
        found = attrs.get(PARENT_ATTR) if attrs.get(PARENT_URI_ATTR) in (uri, redact_uri(uri)) else None
        parent = ParentRun.adopt(client, found, uri, experiment) if found else None
        if parent is None:
            parent = ParentRun.start(
                "study",
                experiment=experiment,
                uri=uri,
                run_name=f"study {study.study_name}"[:250],
                note=f"Optuna study {study.study_name}",
                tags={"optuna.study": study.study_name, "optuna.storage": redact_uri(storage)},
            )
            study.set_user_attr(PARENT_ATTR, parent.run_id)
            study.set_user_attr(PARENT_URI_ATTR, redact_uri(uri))
        study.set_user_attr(PARENT_OWNER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
        return parent


def close_parent(parent: ParentRun | None, study: optuna.Study, interrupted: bool = False) -> None:
    """End the parent run (when there is one) with its trials' counts once no trial of the study is
    running any more: FINISHED, or KILLED ``interrupted`` when this worker was, so a re-run may
    adopt it (best effort then, while unwinding: the reaper ends it otherwise)."""
    from optuna.trial import TrialState

    try:
        if parent is not None and not any(t.state == TrialState.RUNNING for t in fresh_trials(study)):
            parent.finish(Status.INTERRUPTED if interrupted else Status.OK)
    except Exception as error:
        if not interrupted:
            raise
        log.warning("could not close the study's MLflow parent run: %s", error)


def write_study_files(study: optuna.Study, summary: StudySummary, folder: Path) -> list[str]:
    """optimization_results.yaml, trials.csv and the plots into ``folder``; returns notes."""

    summary_yaml = yaml.safe_dump(redact_value(summary.to_dict()), sort_keys=False)
    write_text("run_dir", folder / "optimization_results.yaml", summary_yaml)
    write_text("run_dir", folder / "trials.csv", redact_text(study.trials_dataframe().map(cell).to_csv(index=False)))
    plot_history(study, folder / "optimization_history.png")
    return [plot_importance(study, folder / "param_importance.png")[1]]


def log_study(parent: ParentRun, study: optuna.Study, summary: StudySummary, storage: str) -> None:
    """Log the study's result to its parent run: counts, best trial, ``study/`` artifacts."""
    metrics = {
        **{f"trials.{state}": n for state, n in summary.states.items()},
        **{f"trials.status.{status}": n for status, n in summary.statuses.items()},
        "trials.total": summary.n_trials,
    }
    tags = {
        "optuna.study": study.study_name,
        "optuna.storage": redact_uri(storage),
        "optuna.direction": summary.direction,
    }
    if summary.best is not None:
        metrics.update({"best.samples_per_s": summary.best.value, "best.trial": summary.best.number})
        tags.update({f"best.{name}": str(value) for name, value in summary.best.params.items()})
        tags.update({"best.overrides": " ".join(summary.best_overrides), "dabench.best_command": summary.command()})
    with tempfile.TemporaryDirectory() as tmp:
        notes = write_study_files(study, summary, Path(tmp))
        parent.log(metrics=metrics, tags={**tags, "dabench.study_notes": "; ".join(notes)})
        parent.log_artifacts(Path(tmp), "study")
