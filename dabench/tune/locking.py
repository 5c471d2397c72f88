"""One lock per study storage, held while a worker creates the schema or the study and while it
asks for trials: PostgreSQL ``pg_advisory_lock`` (key from the lock name), MySQL ``GET_LOCK``,
SQLite ``flock`` on ``<database>.lock``; any other URL has none (said once in the log). A lock is
released when its connection closes or its process dies, so a SIGKILL never leaves a study locked.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
from typing import Iterator

from dabench.runtime.sinks import locked
from dabench.tracking.store import sqlite_path

log = logging.getLogger(__name__)

#: how long a worker waits for the lock before giving up (seconds)
LOCK_TIMEOUT_S = 120.0


@functools.cache
def _engine(url: str):
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    return create_engine(url, poolclass=NullPool)


@functools.cache
def _say_unlocked(storage: str, dialect: str) -> None:
    """Said once per storage."""
    log.warning("no cross-process lock for study storage %s: run one worker per study", dialect)


@contextlib.contextmanager
def study_lock(storage: str, name: str, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock ``name`` of the study store ``storage`` (an SQLAlchemy URL) for the block.
    TimeoutError when it cannot be had within ``timeout_s``."""
    path = sqlite_path(storage)
    if path is not None:
        with locked("study_storage", path, timeout_s):
            yield
        return
    dialect = storage.split(":", 1)[0].split("+", 1)[0]
    if dialect not in ("postgresql", "postgres", "mysql"):
        _say_unlocked(storage, dialect)
        yield
        return
    from sqlalchemy import text

    with _engine(storage).connect() as connection:
        if dialect == "mysql":
            got = connection.execute(text("SELECT GET_LOCK(:n, :t)"), {"n": name[:64], "t": int(timeout_s)}).scalar()
            if got != 1:
                raise TimeoutError(f"could not take MySQL lock {name!r} within {timeout_s:.0f} s")
            try:
                yield
            finally:
                connection.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": name[:64]})
            return
        key = int.from_bytes(hashlib.sha1(name.encode()).digest()[:8], "big", signed=True)  # pg's signed 64 bits
        connection.execute(text(f"SET lock_timeout = {int(timeout_s * 1000)}"))
        connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
        connection.commit()
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            connection.commit()
