"""What MLflow's UI shows of dabench's runs, and the links into it.

The saved view ``dabench`` (an experiment tag holding the UI's saved-view envelope) shows
:data:`KEY_COLUMNS`; links open the model-training view with it. These are MLflow UI internals
(MLflow 3.17.2's bundle, tested in headless Chromium by tests/cli/test_ui.py); docs/ui.md.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import suppress
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from dabench.tracking.store import sqlite_path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5000
#: the saved view's id (``viewStateShareKey``) and the prefix of the experiment tag that holds it
VIEW_KEY = "dabench"
VIEW_TAG_PREFIX = "mlflow.sharedViewState."
VIEW_NAME = "dabench: key columns"
#: (column id, width in px), in the order shown after the run name and date. Column ids are the
#: UI's: ``metrics.`<key>```, ``tags.`<key>```, ``attributes.`Description``` (the run's note)
KEY_COLUMNS: tuple[tuple[str, int], ...] = (
    ("tags.`dabench.mode`", 96),
    ("tags.`dabench.status`", 92),
    ("metrics.`throughput.samples_per_s`", 122),
    ("metrics.`throughput.tokens_per_s`", 122),
    ("metrics.`tier1.compute_efficiency`", 122),
    ("metrics.`tier1.allocation_ratio`", 122),
    ("metrics.`tier1.load_imbalance`", 122),
    ("tags.`dabench.diagnosis`", 130),
    ("tags.`dabench.reason`", 280),
    ("attributes.`Description`", 460),
)
RUN_NAME_COLUMN = ("attributes.`Run Name`", 250)
_ML_VIEW = "workflowType=machine_learning"


def view_state() -> dict[str, Any]:
    """The saved view's state: ``selectedColumns``, ``columnOrder`` and ``columnWidths``."""
    columns = [name for name, _ in KEY_COLUMNS]
    order = [RUN_NAME_COLUMN[0], "runDateAndNestInfo", *columns, "duration"]
    return {"selectedColumns": columns, "columnOrder": order, "columnWidths": dict([RUN_NAME_COLUMN, *KEY_COLUMNS])}


def saved_view_tag(now_ms: int | None = None) -> tuple[str, str]:
    """(tag key, tag value) of the saved view: its envelope with :func:`view_state` as JSON text."""
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    envelope = {"name": VIEW_NAME, "createdAt": now, "updatedAt": now, "state": json.dumps(view_state())}
    return VIEW_TAG_PREFIX + VIEW_KEY, json.dumps(envelope)


def ensure_saved_view(client: Any, experiment_id: str, tags: Mapping[str, str]) -> bool:
    """Set the saved-view tag on the experiment unless ``tags`` (its current tags) already hold
    this state; True when written."""
    key, value = saved_view_tag()
    with suppress(KeyError, TypeError, ValueError):
        if json.loads(json.loads(tags[key])["state"]) == view_state():
            return False
    client.set_experiment_tag(experiment_id, key, value)
    return True


def ui_base_url(tracking_uri: str | None, port: int = DEFAULT_PORT, environ: Mapping[str, str] = os.environ) -> str:
    """The MLflow UI's address: ``$DABENCH_UI_URL``, else an http(s) tracking URI without
    credentials, else ``dabench ui``'s default address; no trailing /."""
    if environ.get("DABENCH_UI_URL"):
        return environ["DABENCH_UI_URL"].rstrip("/")
    if tracking_uri and tracking_uri.startswith(("http://", "https://")):
        parts = urlsplit(tracking_uri)
        netloc = parts.netloc.rpartition("@")[2]  # credentials dropped
        return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return f"http://{DEFAULT_HOST}:{port}"


def runs_view_url(base: str, experiment_id: str) -> str:
    """The experiment's runs table, model-training view, saved view ``dabench``."""
    return f"{base}/#/experiments/{experiment_id}/runs?{_ML_VIEW}&viewStateShareKey={VIEW_KEY}"


def run_url(base: str, run_id: str, experiment_id: str | None = None) -> str:
    """One run's page: in the model-training view when the experiment is known, else ``#/runs/<id>``."""
    if experiment_id:
        return f"{base}/#/experiments/{experiment_id}/runs/{run_id}?{_ML_VIEW}"
    return f"{base}/#/runs/{run_id}"


def run_urls(tracking_uri: str, runs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """run id -> :func:`run_url` for ``runs`` as (run id, experiment name), the experiments' ids
    from one search of the store (none when it cannot be read)."""
    try:
        db = sqlite_path(tracking_uri)
        if db is not None and not db.exists():
            raise FileNotFoundError(db)  # never create a store to make links
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        ids = {e.name: e.experiment_id for e in client.search_experiments(max_results=50000)}
    except Exception:  # a link without the experiment still opens the run
        ids = {}
    base = ui_base_url(tracking_uri)
    return {run_id: run_url(base, run_id, ids.get(str(name))) for run_id, name in runs}
