"""Where runs are recorded: the MLflow tracking URI and artifact root.

- ``tracking.uri`` when set, else ``$MLFLOW_TRACKING_URI``, else a SQLite store at
  ``<launch dir>/mlruns/mlflow.db``; artifacts under ``<launch dir>/mlruns/artifacts``.
- Paths are absolute because Hydra changes the working directory per job; the launch directory
  is Hydra's original working directory.
"""

from __future__ import annotations

import os
from pathlib import Path


def launch_dir() -> Path:
    """The directory dabench was started from (Hydra's original cwd when inside a Hydra job)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            return Path(HydraConfig.get().runtime.cwd)
    except ImportError:  # pragma: no cover - hydra is a dependency
        pass
    return Path.cwd()


def tracking_uri(configured: str | None = None) -> str:
    """The MLflow tracking URI for this run (see module docstring for the order)."""
    if configured:
        return configured
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    store = launch_dir() / "mlruns"
    store.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{store / 'mlflow.db'}"


def artifact_root(uri: str) -> str | None:
    """An absolute file artifact location for local stores; None lets a tracking server decide."""
    if uri.startswith(("http://", "https://", "databricks")):
        return None
    if uri.startswith("sqlite:///"):
        return (Path(uri[len("sqlite:///"):]).parent / "artifacts").as_uri()
    return (launch_dir() / "mlruns" / "artifacts").as_uri()


def client_and_experiment(uri: str, experiment: str):
    """(MlflowClient, experiment id), creating the experiment with a local artifact root."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is not None:
        return client, found.experiment_id
    try:
        return client, client.create_experiment(experiment, artifact_location=artifact_root(uri))
    except Exception:  # created concurrently by another job
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise
        return client, found.experiment_id
