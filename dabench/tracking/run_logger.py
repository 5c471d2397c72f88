"""Record an already-finished piece of work as one MLflow run, in a few batched calls.

A thin form of :func:`dabench.tracking.lifecycle.recorded_run` for callers whose work happened
before recording (kept for compatibility); a run whose work is still to come should open
``recorded_run`` before the work so that its start time and its fate on an interruption are real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dabench.status import Status, parse
from dabench.tracking.lifecycle import (  # noqa: F401  re-exported
    MAX_PARAM_CHARS,
    MAX_TAG_CHARS,
    PARENT_ENV,
    git_commit,
    package_version,
    recorded_run,
)


def log_run(*, experiment: str, uri: str | None, run_name: str, params: Mapping[str, Any],
            metrics: Mapping[str, float], tags: Mapping[str, str], artifact_dir: Path | None,
            failed: bool = False, status: Status | str | None = None) -> str:
    """Create a run (a child of $DABENCH_PARENT_RUN_ID when set), log everything, end it in the
    MLflow state of ``status`` (default: the ``dabench.status`` tag, else ``crashed`` when
    ``failed``, else ``ok``). Metrics go in one batch (MLflow allows 1,000 per call); params in
    batches of 100."""
    if status is None:
        status = tags.get("dabench.status") or (Status.CRASHED if failed else Status.OK)
    with recorded_run(experiment=experiment, uri=uri, run_name=run_name, tags=tags, status_tags=False) as run:
        run.log(params=params, metrics=metrics)
        run.log_artifacts(artifact_dir)
        run.set_status(parse(status))
    return run.run_id
