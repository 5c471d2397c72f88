"""The study's MLflow parent run: one per study, holding the study's result.

The Hydra callback (:mod:`dabench.tracking.callbacks`) opens a parent run per ``-m`` invocation
and exports its id as ``$DABENCH_PARENT_RUN_ID``; trials log child runs under it. A study that is
resumed by re-running its command would so get a second parent. To keep one parent per study,
the sweeper *moves* the children of the study's previous parent (recorded in the study's user
attributes) under the new one and deletes the previous parent (a soft delete: ``mlflow runs
restore`` brings it back), but only when that previous parent is no longer running (it finished,
was killed by Ctrl-C, or its sweep process is gone). At the end of a sweep the parent receives:

- params ``best.<name>`` (the best trial's Optuna parameters) and ``best.overrides``;
- metrics ``best.samples_per_s``, ``best.trial``, ``trials.<state>`` (complete, fail, ...) and
  ``trials.status.<status>`` (ok, capacity, oom, ...);
- tags ``optuna.study``, ``optuna.storage`` (password hidden), ``dabench.best_command``;
- artifacts under ``study/``: optimization_history.png, param_importance.png (when there are
  enough completed trials), optimization_results.yaml, trials.csv.
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

from dabench.status import Status
from dabench.tracking.lifecycle import terminate
from dabench.tune.plots import plot_history, plot_importance
from dabench.tune.results import StudySummary

log = logging.getLogger(__name__)

PARENT_ATTR = "dabench.mlflow_parent_run_id"
PARENT_URI_ATTR = "dabench.mlflow_tracking_uri"
PARENT_OWNER_ATTR = "dabench.mlflow_parent_owner"  #: "host:pid" of the sweep that holds it


def hide_password(url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1] if "@" in url else url


def _owner_gone(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def adopt_previous_parent(study: optuna.Study, client, uri: str, parent_id: str) -> list[str]:
    """Move the children of the study's previous parent run under ``parent_id`` and delete the
    previous parent (see module docstring for when). Records ``parent_id`` as the study's parent.
    Returns the ids of the moved runs."""
    previous = study.user_attrs.get(PARENT_ATTR)
    moved: list[str] = []
    if previous and previous != parent_id and study.user_attrs.get(PARENT_URI_ATTR) == uri:
        try:
            old = client.get_run(previous)
        except Exception:
            old = None
        if old is not None and old.info.lifecycle_stage == "active":
            if old.info.status == "RUNNING" and not _owner_gone(study.user_attrs.get(PARENT_OWNER_ATTR)):
                log.warning("study %s: its previous MLflow parent run %s is still running elsewhere; "
                            "this invocation's trials go under a second parent %s", study.study_name, previous, parent_id)
            else:
                children = client.search_runs([old.info.experiment_id],
                                              filter_string=f"tags.mlflow.parentRunId = '{previous}'",
                                              max_results=50000)
                for child in children:
                    client.set_tag(child.info.run_id, "mlflow.parentRunId", parent_id)
                    moved.append(child.info.run_id)
                client.set_tag(previous, "dabench.superseded_by", parent_id)
                client.delete_run(previous)
                log.info("study %s resumed: moved %d trial runs from parent %s to %s", study.study_name,
                         len(moved), previous, parent_id)
    study.set_user_attr(PARENT_ATTR, parent_id)
    study.set_user_attr(PARENT_URI_ATTR, uri)
    study.set_user_attr(PARENT_OWNER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
    return moved


def mark_killed(client, parent_id: str) -> None:
    """An interrupted sweep: the parent run ends KILLED (so a re-run may adopt it)."""
    try:
        terminate(client, parent_id, Status.INTERRUPTED)  # KILLED, real end time
    except Exception as error:  # best effort while unwinding
        log.warning("could not mark MLflow run %s killed: %s", parent_id, error)


def write_study_files(study: optuna.Study, summary: StudySummary, folder: Path) -> list[str]:
    """optimization_results.yaml, trials.csv and the plots into ``folder``; returns notes."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "optimization_results.yaml").write_text(yaml.safe_dump(summary.to_dict(), sort_keys=False))
    study.trials_dataframe().to_csv(folder / "trials.csv", index=False)
    plot_history(study, folder / "optimization_history.png")
    _, note = plot_importance(study, folder / "param_importance.png")
    return [note]


def log_study(client, parent_id: str, study: optuna.Study, summary: StudySummary, storage: str) -> None:
    """Log the study's result to its parent run (see module docstring)."""
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    metrics = [Metric(f"trials.{state}", float(n), now, 0) for state, n in summary.states.items()]
    metrics += [Metric(f"trials.status.{status}", float(n), now, 0) for status, n in summary.statuses.items()]
    metrics.append(Metric("trials.total", float(summary.n_trials), now, 0))
    params, tags = [], [RunTag("optuna.study", study.study_name), RunTag("optuna.storage", hide_password(storage)),
                        RunTag("optuna.direction", summary.direction)]
    if summary.best_number is not None:
        metrics += [Metric("best.samples_per_s", float(summary.best_value), now, 0),
                    Metric("best.trial", float(summary.best_number), now, 0)]
        params = [Param(f"best.{name}", str(value)[:6000]) for name, value in summary.best_params.items()]
        params.append(Param("best.overrides", " ".join(summary.best_overrides)[:6000]))
        tags.append(RunTag("dabench.best_command", summary.command()[:5000]))
    existing = client.get_run(parent_id).data.params
    params = [p for p in params if existing.get(p.key) in (None, p.value)]
    client.log_batch(parent_id, metrics=metrics, params=params[:100], tags=tags)
    with tempfile.TemporaryDirectory() as tmp:
        notes = write_study_files(study, summary, Path(tmp))
        client.log_artifacts(parent_id, tmp, artifact_path="study")
    client.set_tag(parent_id, "dabench.study_notes", "; ".join(notes))
