"""Writing a run's record to MLflow in as few calls as MLflow allows, within its limits, with no
secret in it; and a parent's counts of its children. Used by the run lifecycle and the outbox."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Mapping, Sequence

from dabench.core.status import is_ok
from dabench.tracking.naming import MAX_PARAM_CHARS, MAX_RUN_NAME_CHARS, MAX_TAG_CHARS, fit_value, truncation_note
from dabench.tracking.redact import redact_pair

STATUS_TAG, REASON_TAG = "dabench.status", "dabench.reason"


def now_ms() -> int:
    return int(time.time() * 1000)


def status_tags(status: str, reason: str = "") -> dict[str, str]:
    """``dabench.status`` and, when there is one, ``dabench.reason``."""
    return {STATUS_TAG: status, REASON_TAG: reason} if reason else {STATUS_TAG: status}


def create_run(client, experiment_id: str, start_ms: int, run_name: str, tags: Mapping[str, Any] | None = None) -> str:
    """A new run's id: named ``run_name`` (a generated name too long for the store shortened, with
    a ``dabench.truncated`` note), started at ``start_ms``, with ``tags``."""
    name, note = fit_value("run name", run_name, MAX_RUN_NAME_CHARS)
    tags = {**(tags or {}), **truncation_note([note])}
    return client.create_run(experiment_id, start_time=start_ms, run_name=name, tags=tags).info.run_id


def write_batch(
    client,
    run_id: str,
    params: Mapping[str, Any] | None = None,
    metrics: Mapping[str, float] | None = None,
    tags: Mapping[str, Any] | None = None,
    timestamp_ms: int | None = None,
) -> None:
    """Params, metrics and tags in as few calls as MLflow allows; values over MLflow's limits
    shortened and named in ``dabench.truncated``; ``None`` metrics left out."""
    from mlflow.entities import Metric, Param, RunTag

    stamp = timestamp_ms if timestamp_ms is not None else now_ms()
    metric_list = [Metric(k, float(v), stamp, 0) for k, v in (metrics or {}).items() if v is not None]

    notes: list[str | None] = []

    def fit(key: str, value: Any, limit: int) -> str:
        text, note = fit_value(key, redact_pair(key, value), limit)
        notes.append(note)
        return text

    param_list = [Param(k, fit(k, v, MAX_PARAM_CHARS)) for k, v in (params or {}).items()]
    tag_list = [RunTag(k, fit(k, v, MAX_TAG_CHARS)) for k, v in (tags or {}).items()]
    tag_list += [RunTag(k, v) for k, v in truncation_note(notes).items()]
    if not (metric_list or param_list or tag_list):
        return
    client.log_batch(run_id, metrics=metric_list[:1000], params=param_list[:100], tags=tag_list)
    for i in range(100, len(param_list), 100):
        client.log_batch(run_id, params=param_list[i : i + 100])
    for i in range(1000, len(metric_list), 1000):
        client.log_batch(run_id, metrics=metric_list[i : i + 1000])


def log_child_counts(
    client, run_id: str, waiting: Sequence[Any] = (), outcomes: Sequence[tuple[str, Any]] | None = None
) -> dict[str, int]:
    """Log ``jobs.total``, ``jobs.<status>`` and ``jobs.best_samples_per_s`` on a parent; returns the
    counts by status. ``outcomes``: its children as (status, samples/s or None); else its children
    in the store, and ``waiting``, those in the outbox, each in place of the stored run of its id."""
    if outcomes is None:
        newer = {run.info.run_id for run in waiting}
        stored = client.search_runs(
            [client.get_run(run_id).info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{run_id}'",
            max_results=50000,
        )
        children = [run for run in stored if run.info.run_id not in newer] + list(waiting)
        outcomes = [
            (c.data.tags.get(STATUS_TAG, "unknown"), c.data.metrics.get("throughput.samples_per_s")) for c in children
        ]
    counts = dict(Counter(status for status, _ in outcomes))
    best = max((value for status, value in outcomes if is_ok(status) and value is not None), default=None)
    metrics = {"jobs.total": float(sum(counts.values())), **{f"jobs.{k}": float(n) for k, n in counts.items()}}
    if best is not None:
        metrics["jobs.best_samples_per_s"] = float(best)
    write_batch(client, run_id, metrics=metrics)
    return counts
