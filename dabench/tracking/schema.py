"""A new local SQLite store starts as a copy of an empty, migrated MLflow schema.

The template is MLflow's own new store without its Default experiment (MLflow adds it when it
first opens the copy), made once per MLflow and SQLAlchemy version in
``$DABENCH_CACHE_DIR/mlflow-schema/``; when it cannot be kept, MLflow creates the schema itself.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import tempfile
from pathlib import Path

from dabench.runtime.sinks import cache_dir, copy_file, one_line

log = logging.getLogger("dabench.tracking")


def template_path() -> Path:
    """Where this MLflow's empty schema is kept: ``$DABENCH_CACHE_DIR/mlflow-schema/<versions>.db``."""
    import mlflow
    import sqlalchemy

    return cache_dir() / "mlflow-schema" / f"mlflow-{mlflow.__version__}-sqlalchemy-{sqlalchemy.__version__}.db"


def _build(target: Path) -> None:
    """MLflow's own new store in a scratch folder, without its Default experiment, copied to ``target``."""
    from mlflow.tracking import MlflowClient

    scratch = Path(tempfile.mkdtemp(prefix="dabench-schema-"))
    try:
        db = scratch / "mlflow.db"
        MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()  # MLflow runs its migrations
        con = sqlite3.connect(db)
        con.execute("DELETE FROM experiments")  # the Default experiment names this scratch path
        con.commit()
        con.execute("VACUUM")
        con.close()
        copy_file("schema_cache", db, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _valid(path: Path) -> bool:
    """``path`` is an empty MLflow store: a SQLite file with a schema version and no experiment."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            version = con.execute("SELECT version_num FROM alembic_version").fetchall()
            experiments = con.execute("SELECT count(*) FROM experiments").fetchone()[0]
        con.close()
    except sqlite3.Error:
        return False
    return len(version) == 1 and experiments == 0


def template() -> Path | None:
    """The empty schema, made now when missing or damaged; None (and a warning) when it cannot be kept."""
    path = template_path()
    if path.is_file() and _valid(path):
        return path
    try:
        _build(path)
    except Exception as error:  # a cache only saves time: any failure leaves the schema to MLflow
        log.warning("empty MLflow schema not cached: %s; MLflow makes the schema itself", one_line(error))
        return None
    return path


def seed(db: Path | None) -> bool:
    """Copy the empty schema to ``db`` when it is a SQLite store that does not exist yet (under
    :func:`dabench.tracking.store.store_lock`); True when copied."""
    if db is None or (db.exists() and db.stat().st_size > 0):
        return False
    source = template()
    if source is None:
        return False
    copy_file("store", source, db)
    return True
