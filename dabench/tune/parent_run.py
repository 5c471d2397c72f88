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
import time
from pathlib import Path

import optuna
import yaml

from dabench.core.status import Status
from dabench.runtime.pids import pid_alive
from dabench.runtime.sinks import write_text
from dabench.tracking import outbox
from dabench.tracking.lifecycle import open_parent, terminate
from dabench.tracking.reaper import owner_tags
from dabench.tracking.redact import redact_pair, redact_text, redact_uri, redact_value
from dabench.tracking.store import client_and_experiment
from dabench.tracking.writes import now_ms, write_batch
from dabench.tune.best import StudySummary
from dabench.tune.plots import plot_history, plot_importance
from dabench.tune.study import fresh_trials

log = logging.getLogger(__name__)

PARENT_ATTR = "dabench.mlflow_parent_run_id"
PARENT_URI_ATTR = "dabench.mlflow_tracking_uri"
PARENT_OWNER_ATTR = "dabench.mlflow_parent_owner"  #: "host:pid" of the sweep that holds it


def _same_store(recorded: str | None, uri: str) -> bool:
    """Whether the study's recorded tracking URI (masked; unmasked from older versions) is ``uri``."""
    return recorded is not None and recorded in (uri, redact_uri(uri))


def _owner_gone(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return not pid_alive(int(pid))


def study_parent(study: optuna.Study, uri: str, experiment: str, storage: str, lock) -> tuple[object, str]:
    """(MlflowClient, run id) of the study's parent run in the tracking store ``uri``: found in
    the study's user attributes, else created, while ``lock()`` (the study store's lock) is held
    so that workers starting together create one. A parent that an earlier invocation closed is
    set RUNNING again."""

    client, _ = client_and_experiment(uri, experiment)
    with lock():
        attrs = study._storage.get_study_user_attrs(study._study_id)
        found = attrs.get(PARENT_ATTR) if _same_store(attrs.get(PARENT_URI_ATTR), uri) else None
        if found:
            try:
                run = client.get_run(found)
            except Exception:
                run = None
            if run is not None and run.info.lifecycle_stage == "active":
                if run.info.status != "RUNNING":
                    client.update_run(found, status="RUNNING")

                write_batch(client, found, tags=owner_tags())  # this worker now holds it (the reaper checks it)
                study.set_user_attr(PARENT_OWNER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
                return client, found

        run_id = open_parent(
            "study",
            experiment=experiment,
            uri=uri,
            run_name=f"study {study.study_name}"[:250],
            note=f"Optuna study {study.study_name}",
            tags={"optuna.study": study.study_name, "optuna.storage": redact_uri(storage)},
        ).run_id
        study.set_user_attr(PARENT_ATTR, run_id)
        study.set_user_attr(PARENT_URI_ATTR, redact_uri(uri))
        study.set_user_attr(PARENT_OWNER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
        return client, run_id


def close_parent(client, parent_id: str, study: optuna.Study, interrupted: bool = False) -> bool:
    """End the parent run when no trial of the study is running any more (FINISHED, or KILLED
    when this worker was interrupted); returns whether it was ended."""
    from optuna.trial import TrialState

    if any(t.state == TrialState.RUNNING for t in fresh_trials(study)):
        return False
    if interrupted:  # KILLED with dabench.status=interrupted, so a re-run may adopt it
        try:
            client.set_tag(parent_id, "dabench.status", Status.INTERRUPTED.value)
            terminate(client, parent_id, Status.INTERRUPTED)
        except Exception as error:  # best effort while unwinding
            log.warning("could not mark MLflow run %s killed: %s", parent_id, error)
    else:
        try:  # an earlier interrupted invocation's tag no longer holds
            client.delete_tag(parent_id, "dabench.status")
        except Exception:
            pass
        try:
            terminate(client, parent_id, Status.OK)  # FINISHED, real end time (dabench.tracking.lifecycle)
        except Exception as error:  # the server is away: the close waits in the outbox for dabench sync
            if not _close_later(client, parent_id, error):
                raise
    return True


def _close_later(client, parent_id: str, error: BaseException) -> bool:
    """Keep the parent's FINISHED close in the outbox when a remote store cannot be reached;
    False for any other error (dabench/tracking/outbox.py)."""

    uri = getattr(client, "tracking_uri", "") or ""
    if not (outbox.is_remote(uri) and outbox.is_unreachable(error)):
        return False
    journal = outbox.Journal.new(
        uri=uri,
        experiment="",
        run_name=f"study parent {parent_id}",
        start_ms=now_ms(),
        tags={},
        parent=None,
        server_run_id=parent_id,
    )
    journal.data["acked"]["logged"] = journal.data["acked"]["artifacts"] = True
    journal.close(Status.OK, "", now_ms(), status_tags=False)
    outbox.announce(uri, journal)
    return True


def write_study_files(study: optuna.Study, summary: StudySummary, folder: Path) -> list[str]:
    """optimization_results.yaml, trials.csv and the plots into ``folder``; returns notes."""

    summary_yaml = yaml.safe_dump(redact_value(summary.to_dict()), sort_keys=False)
    write_text("run_dir", folder / "optimization_results.yaml", summary_yaml)
    write_text("run_dir", folder / "trials.csv", redact_text(study.trials_dataframe().to_csv(index=False)))
    plot_history(study, folder / "optimization_history.png")
    _, note = plot_importance(study, folder / "param_importance.png")
    return [note]


def log_study(client, parent_id: str, study: optuna.Study, summary: StudySummary, storage: str) -> None:
    """Log the study's result to its parent run: counts, best trial, ``study/`` artifacts."""
    from mlflow.entities import Metric, RunTag

    now = int(time.time() * 1000)
    metrics = [Metric(f"trials.{state}", float(n), now, 0) for state, n in summary.states.items()]
    metrics += [Metric(f"trials.status.{status}", float(n), now, 0) for status, n in summary.statuses.items()]
    metrics.append(Metric("trials.total", float(summary.n_trials), now, 0))
    tags = [
        RunTag("optuna.study", study.study_name),
        RunTag("optuna.storage", redact_uri(storage)),
        RunTag("optuna.direction", summary.direction),
    ]
    if summary.best_number is not None:
        metrics += [
            Metric("best.samples_per_s", float(summary.best_value), now, 0),
            Metric("best.trial", float(summary.best_number), now, 0),
        ]
        tags += [RunTag(f"best.{name}", str(value)[:5000]) for name, value in summary.best_params.items()]
        tags.append(RunTag("best.overrides", " ".join(summary.best_overrides)[:5000]))
        tags.append(RunTag("dabench.best_command", summary.command()[:5000]))
    tags = [RunTag(tag.key, redact_pair(tag.key, tag.value)) for tag in tags]
    client.log_batch(parent_id, metrics=metrics, tags=tags)
    with tempfile.TemporaryDirectory() as tmp:
        notes = write_study_files(study, summary, Path(tmp))
        client.log_artifacts(parent_id, tmp, artifact_path="study")
    client.set_tag(parent_id, "dabench.study_notes", "; ".join(notes))
