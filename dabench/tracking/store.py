"""Where runs are recorded: the MLflow tracking URI and artifact root, and safe access to it.

``tracking.uri``, else ``$MLFLOW_TRACKING_URI``, else a SQLite store at
``<launch dir>/mlruns/mlflow.db`` (absolute: Hydra changes the working directory per job).
:func:`client_and_experiment` creates the schema under an exclusive ``fcntl`` lock;
:class:`RetryingClient` retries "database is locked" writes with bounded backoff; every call is
bounded by ``tracking.timeout_s`` (:func:`apply_client_timeouts`).

Derivation: docs/reliability.md, section 1.
"""

from __future__ import annotations

import fcntl
import os
import random
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from dabench.core.paths import launch_dir
from dabench.runtime.sinks import fault_point, make_dir, open_stream
from dabench.tracking.redact import redact_client_call
from dabench.tracking.schema import seed

T = TypeVar("T")

#: default bound, in seconds, on one call to a tracking server or database
DEFAULT_TIMEOUT_S = 30.0
#: retries of a write that met "database is locked", and the backoff between them (seconds)
LOCK_RETRIES = 12
LOCK_BACKOFF_S = (0.05, 2.0)
_LOCKED_MARKERS = ("database is locked", "database table is locked", "database schema is locked")


def tracking_uri(configured: str | None = None) -> str:
    """The MLflow tracking URI for this run (see module docstring for the order); a relative local
    one is taken from the launch folder (:func:`absolute_uri`)."""
    if configured:
        return absolute_uri(configured)
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return absolute_uri(os.environ["MLFLOW_TRACKING_URI"])

    store = make_dir("store", launch_dir() / "mlruns")
    return f"sqlite:///{store / 'mlflow.db'}"


def absolute_uri(uri: str) -> str:
    """A local store URI with a relative path (``sqlite:///runs.db``, ``file:mlruns``, ``mlruns``)
    made absolute against the launch folder, not the Hydra job's working folder; others unchanged."""
    if uri.startswith("sqlite:///"):
        rest = uri[len("sqlite:///") :]
        if rest and not rest.startswith(("/", ":memory:", "?")):
            return f"sqlite:///{launch_dir() / rest}"
        return uri
    if uri.startswith("file:") and not uri.startswith("file:/"):
        return (launch_dir() / uri[len("file:") :]).as_uri()
    if ":" not in uri and not uri.startswith("/") and uri not in ("databricks", "databricks-uc", "uc"):  # a path
        return str(launch_dir() / uri)
    return uri


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for any other store or in-memory)."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///") :].split("?", 1)[0]
    return Path(path) if path not in ("", ":memory:") else None


def artifact_root(uri: str) -> str | None:
    """An absolute file artifact location for local stores; None lets a tracking server decide."""
    if uri.startswith(("http://", "https://", "databricks")):
        return None
    db = sqlite_path(uri)
    if db is not None:
        return (db.parent / "artifacts").as_uri()
    return (launch_dir() / "mlruns" / "artifacts").as_uri()


# ----------------------------------------------------------------------------- timeouts


#: client settings the user chose in the environment before dabench started (never overridden)
_USER_SET = frozenset(
    k
    for k in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR")
    if k in os.environ
)
_timeout_s = DEFAULT_TIMEOUT_S


def apply_client_timeouts(timeout_s: float | None = None) -> float:
    """Bound every later call to a tracking server or database by ``timeout_s`` (default: the
    last value given, initially :data:`DEFAULT_TIMEOUT_S`): the MLflow HTTP client's request
    timeout with at most 2 retries (environment variables MLflow reads at every request; values
    the user set before dabench started win), and the driver connect timeout that
    :func:`with_connect_timeout` adds. Returns the bound in effect."""
    global _timeout_s
    if timeout_s:
        _timeout_s = float(timeout_s)
    settings = {
        "MLFLOW_HTTP_REQUEST_TIMEOUT": str(int(max(1, round(_timeout_s)))),
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    }
    for key, value in settings.items():
        if key not in _USER_SET:
            os.environ[key] = value
    return _timeout_s


def with_connect_timeout(uri: str, timeout_s: float | None = None) -> str:
    """A database URI whose driver gives up connecting after ``timeout_s`` (default: the bound
    of :func:`apply_client_timeouts`): ``connect_timeout`` for PostgreSQL (libpq) and MySQL;
    other URIs are returned unchanged. An explicit value in the URI wins."""
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme not in ("postgresql", "postgres", "mysql"):
        return uri
    parts = urlsplit(uri)
    query = dict(parse_qsl(parts.query))
    query.setdefault("connect_timeout", str(int(max(1, round(timeout_s or _timeout_s)))))
    return urlunsplit(parts._replace(query=urlencode(query)))


# ----------------------------------------------------------------------------- locking and retries


def is_locked_error(error: BaseException) -> bool:
    """True for SQLite's "database is locked" (as sqlite3, SQLAlchemy or MlflowException)."""
    text = str(error).lower()
    return any(marker in text for marker in _LOCKED_MARKERS)


def retry_locked(
    call: Callable[[], T],
    *,
    retries: int = LOCK_RETRIES,
    backoff: tuple[float, float] = LOCK_BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``call()``, repeated while it fails with "database is locked": at most ``retries`` more
    times, waiting ``min(backoff[1], backoff[0] * 2**i)`` times a random factor in [0.5, 1.5]
    before try ``i + 1``. Any other error, or the last locked one, is raised."""
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as error:
            if attempt == retries or not is_locked_error(error):
                raise
            sleep(min(backoff[1], backoff[0] * 2**attempt) * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")  # pragma: no cover


#: client methods that write the store, and those that write the artifact root (runtime/sinks.py)
_STORE_WRITES = frozenset(
    ("create_run", "log_batch", "set_terminated", "set_tag", "log_metric", "log_param", "update_run")
    + ("create_experiment", "set_experiment_tag", "delete_tag", "log_inputs")
)
_ARTIFACT_WRITES = frozenset(("log_artifact", "log_artifacts", "log_text", "log_dict", "log_figure", "log_image"))


class RetryingClient:
    """An ``MlflowClient`` whose method calls are retried on "database is locked"
    (:func:`retry_locked`) and whose writes are redacted
    (:func:`dabench.tracking.redact.redact_client_call`); everything else passes through unchanged."""

    def __init__(self, client: Any):
        self._client = client

    @property
    def tracking_uri(self) -> str:
        return self._client.tracking_uri

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        sink = "artifacts" if name in _ARTIFACT_WRITES else "store" if name in _STORE_WRITES else None

        def call(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = redact_client_call(attr, args, kwargs)  # no secret reaches the store
            if sink is not None:
                fault_point(sink)  # tests: this write meets a full disk, a denied folder, an I/O error
            return retry_locked(lambda: attr(*args, **kwargs))

        call.__name__ = name
        return call


@contextmanager
def store_lock(uri: str, timeout_s: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``<db>.lock`` beside a SQLite store (no-op for other stores).
    Waits at most ``timeout_s`` (default 120 s: a schema migration takes a few seconds) and then
    raises TimeoutError naming the lock file."""
    db = sqlite_path(uri)
    if db is None:
        yield
        return

    make_dir("store", db.parent)
    lock_path = db.with_name(db.name + ".lock")
    deadline = time.monotonic() + (timeout_s or 120.0)
    with open_stream("store", lock_path, "a") as handle:
        delay = 0.01
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"waited {timeout_s or 120.0:g} s for the store lock {lock_path}") from None
                time.sleep(delay)
                delay = min(0.2, delay * 2)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


#: the experiment tag MLflow's UI reads to choose its view (mlflow/server/js: ``mlflow.experimentKind``);
#: ``custom_model_development`` opens the classic runs table (metrics, params), not the GenAI view
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"


def client_and_experiment(uri: str, experiment: str, timeout_s: float | None = None):
    """(client, experiment id): a :class:`RetryingClient` on ``uri`` and the experiment, created
    with a local artifact root when missing. Opening the store (a new SQLite one is seeded with the
    empty schema, :mod:`dabench.tracking.schema`; MLflow migrates an old one) and creating the
    experiment happen under :func:`store_lock`."""
    from mlflow.tracking import MlflowClient

    apply_client_timeouts(timeout_s)
    uri = with_connect_timeout(uri, timeout_s)
    with store_lock(uri):
        seed(sqlite_path(uri))  # a new local store: a copy of the empty schema, not MLflow's migrations
        client = RetryingClient(MlflowClient(tracking_uri=uri))
        found = client.get_experiment_by_name(experiment)  # opens the store: schema created here
        if found is not None:
            if found.tags.get(EXPERIMENT_KIND_TAG) is None:  # made by an older dabench: the classic view too
                client.set_experiment_tag(found.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
            return client, found.experiment_id
        try:
            return client, client.create_experiment(
                experiment, artifact_location=artifact_root(uri), tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
            )
        except Exception:  # created concurrently by a process on another store lock (a server)
            found = client.get_experiment_by_name(experiment)
            if found is None:
                raise
            return client, found.experiment_id
