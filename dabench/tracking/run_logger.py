"""Record one dabench run in MLflow: params, metrics, tags, artifacts, in a few batched calls."""

from __future__ import annotations

import os
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from dabench.tracking.store import client_and_experiment, launch_dir, tracking_uri

PARENT_ENV = "DABENCH_PARENT_RUN_ID"
MAX_PARAM_CHARS = 6000
MAX_TAG_CHARS = 5000


def git_commit(path: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def log_run(*, experiment: str, uri: str | None, run_name: str, params: Mapping[str, Any],
            metrics: Mapping[str, float], tags: Mapping[str, str], artifact_dir: Path | None,
            failed: bool = False) -> str:
    """Create a run (a child of $DABENCH_PARENT_RUN_ID when set), log everything, end it.
    Metrics go in one batch (MLflow allows 1,000 per call); params in batches of 100."""
    from mlflow.entities import Metric, Param, RunTag

    client, experiment_id = client_and_experiment(tracking_uri(uri), experiment)
    all_tags = {
        "dabench.torch_version": package_version("torch"),
        "dabench.git_commit": git_commit(launch_dir()),
        **tags,
    }
    parent = os.environ.get(PARENT_ENV)
    if parent:
        all_tags["mlflow.parentRunId"] = parent
    run = client.create_run(experiment_id, run_name=run_name)
    run_id = run.info.run_id
    now = int(time.time() * 1000)
    metric_list = [Metric(k, float(v), now, 0) for k, v in metrics.items() if v is not None]
    param_list = [Param(k, str(v)[:MAX_PARAM_CHARS]) for k, v in params.items()]
    tag_list = [RunTag(k, str(v)[:MAX_TAG_CHARS]) for k, v in all_tags.items()]
    client.log_batch(run_id, metrics=metric_list[:1000], params=param_list[:100], tags=tag_list)
    for batch in _chunks(param_list[100:], 100):
        client.log_batch(run_id, params=batch)
    for batch in _chunks(metric_list[1000:], 1000):
        client.log_batch(run_id, metrics=batch)
    if artifact_dir is not None and artifact_dir.exists():
        client.log_artifacts(run_id, str(artifact_dir))
    client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")
    return run_id
