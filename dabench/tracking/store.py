"""Where runs are recorded: the MLflow tracking URI and artifact root, and safe access to it.

``tracking.uri``, else ``$MLFLOW_TRACKING_URI``, else ``<launch dir>/mlruns/mlflow.db``. The store
is created under a ``flock``; writes retry "database is locked"; every call is bounded by
``tracking.timeout_s``. Under :func:`read_only` (a command that writes no store, cli/frame.py)
:func:`open_client` and :func:`open_study_storage` open a SQLite store with ``mode=ro`` once it
holds the right tables, create nothing, and raise :class:`WrongStore` (one line) otherwise.
A new local SQLite store starts as a copy of an empty, migrated MLflow schema (:func:`seed`): MLflow's
own new store without its Default experiment (MLflow adds it when it first opens the copy), made
once per MLflow and SQLAlchemy version in ``$DABENCH_CACHE_DIR/mlflow-schema/``; when it cannot be
kept, MLflow creates the schema itself. Derivation: docs/reliability.md, section 1.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import shutil
import sqlite3
import tempfile
import time
from contextlib import closing, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Iterator, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from dabench.core.paths import launch_dir
from dabench.core.status import DabenchError, Status
from dabench.runtime.sinks import cache_dir, copy_file, fault_point, locked, make_dir, one_line
from dabench.tracking.redact import redact_client_call, redact_uri

T = TypeVar("T")
log = logging.getLogger("dabench.tracking")

#: default bound, in seconds, on one call to a tracking server or database
DEFAULT_TIMEOUT_S = 30.0
#: retries of a write that met "database is locked", and the backoff between them (seconds)
LOCK_RETRIES = 12
LOCK_BACKOFF_S = (0.05, 2.0)
_LOCKED_MARKERS = ("database is locked", "database table is locked", "database schema is locked")


def tracking_uri(configured: str | None = None) -> str:
    """The MLflow tracking URI for this run (see module docstring for the order), made absolute."""
    if configured or os.environ.get("MLFLOW_TRACKING_URI"):
        return absolute_uri(configured or os.environ["MLFLOW_TRACKING_URI"])
    store = launch_dir() / "mlruns" if _read_only else make_dir("store", launch_dir() / "mlruns")
    return f"sqlite:///{store / 'mlflow.db'}"


def absolute_uri(uri: str) -> str:
    """A local store URI with a relative path made absolute against the launch folder."""
    rest = uri.removeprefix("sqlite:///")
    if uri.startswith("sqlite:///") and rest and not rest.startswith(("/", ":memory:", "?")):
        return f"sqlite:///{launch_dir() / rest}"
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


_read_only = False
#: the tables that make a SQLite file an MLflow store, an Optuna storage
KINDS = {"an MLflow store": {"experiments", "runs"}, "an Optuna study storage": {"studies", "trials"}}


class WrongStore(DabenchError, status=Status.INVALID_CONFIG):
    """A store to read that is missing or holds something else: one line naming it."""


@contextmanager
def read_only(on: bool = True) -> Iterator[None]:
    """While ``on``: stores are opened for reading only (see the module doc)."""
    global _read_only
    before, _read_only = _read_only, on
    try:
        yield
    finally:
        _read_only = before


@functools.lru_cache(maxsize=1)
def _schema_head() -> str:
    """The schema version this MLflow writes (its migrations' head)."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    return _get_latest_schema_revision()


def schema_problem(path: Path, redacted: str) -> str | None:
    """Why the MLflow store or Optuna storage ``path`` (an existing SQLite file) cannot be opened
    here: its schema is an older or a newer one than the installed library's (whose own refusal
    gives advice that fits only one case, as a traceback in a study); None when it matches, or when
    it is neither."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "alembic_version" not in tables:
                return None
            found = ",".join(row[0] for row in db.execute("SELECT version_num FROM alembic_version"))
    except sqlite3.Error:
        return None  # unreadable or busy: the readers' own checks say so
    if not found:  # none stamped yet: a store another process is creating right now, or no library's own
        return None
    if KINDS["an MLflow store"] <= tables:
        import mlflow

        library, head = f"MLflow {mlflow.__version__}", _schema_head()
        if found == head:
            return None
        from alembic.script import ScriptDirectory
        from mlflow.store.db.utils import _get_alembic_config

        script = ScriptDirectory.from_config(_get_alembic_config(str(path)))
        known = _known(lambda: [script.get_revision(v) for v in found.split(",")])
        upgrade = f"mlflow db upgrade {redacted}"
    elif KINDS["an Optuna study storage"] <= tables:
        import optuna

        opened = optuna.storages.RDBStorage(
            f"sqlite:///file:{quote(str(path), safe='')}?mode=ro&uri=true",
            skip_compatibility_check=True,
            skip_table_creation=True,
        )
        library, head = f"Optuna {optuna.__version__}", opened.get_head_version()
        known = found in opened.get_all_versions()
        opened.engine.dispose()
        upgrade = f"optuna storage upgrade --storage {redacted}"
    else:
        return None
    if found == head:
        return None
    name = library.split()[0]
    if known:
        return f"written by an older {name} (schema {found}; {library} needs {head}): back it up, then run: {upgrade}"
    return (
        f"written by a newer {name} or another tool (schema {found}, unknown to {library}): "
        "open it with the version that wrote it, or give another store"
    )


def _known(revisions: Callable[[], list]) -> bool:
    """Whether every revision ``revisions()`` looks up exists (alembic raises for one it does not know)."""
    try:
        return all(revisions())
    except Exception:
        return False


def _reading(uri: str, kind: str, redacted: str) -> str:
    """``uri`` to open: a SQLite file, while read-only, as ``mode=ro`` once it is ``kind``; WrongStore
    otherwise. A writer may create the file or its tables, but an existing file must be SQLite."""
    path = sqlite_path(uri)
    if path is None or not (_read_only or path.is_file()):
        return uri
    if not path.is_file():
        raise WrongStore(f"no {kind.split(' ', 1)[1]} at {redacted} (nothing is created by a command that reads)")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as error:
        raise WrongStore(f"{redacted}: not a SQLite database ({error}), so not {kind}") from None
    problem = schema_problem(path, redacted)
    if problem:
        raise WrongStore(f"{redacted}: {problem}")
    if not _read_only:
        return uri
    if not KINDS[kind] <= tables:
        found = next((k for k, need in KINDS.items() if need <= tables), "empty" if not tables else "other tables")
        raise WrongStore(f"{redacted}: holds {found}, not {kind}; give the right store")
    return f"sqlite:///file:{quote(str(path), safe='')}?mode=ro&uri=true"  # quoted: MLflow makes no folder


class Unanswered(DabenchError, status=Status.TRACKING_ERROR):
    """A tracking server that does not answer: one line naming it."""


#: a server found hung is taken as hung for this long (each call would wait its whole bound again)
SILENT_FOR_S = 60.0
_SILENT: dict[str, float] = {}


def http_silence(uri: str, timeout_s: float) -> str | None:
    """Why the server of an ``http(s)://`` URI gives no HTTP answer within ``timeout_s`` (refused,
    or a connection it holds open without a reply: a hung server); None once it answers at all, and
    where a proxy or TLS settings stand between (MLflow's client decides there)."""
    import http.client
    import ssl
    import urllib.request

    parts = urlsplit(uri)
    if urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    if time.monotonic() - _SILENT.get(uri, -SILENT_FOR_S) < SILENT_FOR_S:  # found hung a moment ago: once
        return f"no answer within {timeout_s:g} s (a moment ago)"
    connection = (http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection)(
        parts.hostname or "", parts.port, timeout=timeout_s
    )
    try:
        connection.request("GET", parts.path.rstrip("/") + "/health")
        connection.getresponse()
        return None
    except ssl.SSLError:  # it answered the handshake; its certificate is MLflow's settings' business
        return None
    except TimeoutError:
        _SILENT[uri] = time.monotonic()
        return f"no answer within {timeout_s:g} s"
    except (OSError, http.client.HTTPException) as error:
        return getattr(error, "strerror", None) or str(error) or type(error).__name__
    finally:
        connection.close()


def refuse_silent(uri: str) -> None:
    """:class:`Unanswered` when the server of an ``http(s)://`` ``uri`` gives no HTTP answer within the
    call bound (:func:`apply_client_timeouts`): one wait, not MLflow's retries of every call."""
    if not uri.lower().startswith(("http://", "https://")):
        return
    try:
        bound = float(os.environ[_HTTP_SETTINGS[0]])  # the user's own, or the one applied
    except (KeyError, ValueError):  # not a number: MLflow's client says so when it reads it
        bound = _timeout_s
    silence = http_silence(uri, bound)
    if silence:
        raise Unanswered(f"the tracking server {redact_uri(uri)} does not answer ({silence})")


def open_client(uri: str | None = None, timeout_s: float | None = None) -> "RetryingClient":
    """A :class:`RetryingClient` on ``uri`` (default: dabench's store), read-only under :func:`read_only`;
    a server that gives no HTTP answer within the call bound is :class:`Unanswered`."""
    from mlflow.tracking import MlflowClient

    apply_client_timeouts(timeout_s)
    resolved = tracking_uri(uri)
    refuse_silent(resolved)
    opened = _reading(with_connect_timeout(resolved, timeout_s), "an MLflow store", redact_uri(resolved))
    return RetryingClient(MlflowClient(tracking_uri=opened), shown=resolved)


def open_study_storage(url: str, **options: Any) -> Any:
    """An Optuna ``RDBStorage`` on ``url``; under :func:`read_only` one that exists, opened with ``mode=ro``."""
    import optuna

    opened = _reading(url, "an Optuna study storage", redact_uri(url))
    return optuna.storages.RDBStorage(opened, **{"skip_table_creation": _read_only, **options})


def search_all(client: Any, experiment_ids: Iterable[str], filter_string: str = "", limit: int | None = None) -> list:
    """Every run matching ``filter_string`` (at most ``limit``), one ``search_runs`` call per 1,000."""
    ids, runs, token = list(experiment_ids), [], None
    while ids:
        size = 1000 if limit is None else min(1000, limit - len(runs))
        page = client.search_runs(ids, filter_string=filter_string, max_results=size, page_token=token)
        runs += list(page)
        token = getattr(page, "token", None)
        if not token or (limit is not None and len(runs) >= limit):
            break
    return runs


def artifact_root(uri: str) -> str | None:
    """An absolute file artifact location for local stores; None lets a tracking server decide."""
    if uri.startswith(("http://", "https://", "databricks")):
        return None
    db = sqlite_path(uri)
    if db is not None:
        return (db.parent / "artifacts").as_uri()
    return (launch_dir() / "mlruns" / "artifacts").as_uri()


#: client settings the user chose in the environment before dabench started (never overridden)
_HTTP_SETTINGS = (
    "MLFLOW_HTTP_REQUEST_TIMEOUT",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
)
_USER_SET = frozenset(k for k in _HTTP_SETTINGS if k in os.environ)
_timeout_s = DEFAULT_TIMEOUT_S


def apply_client_timeouts(timeout_s: float | None = None) -> float:
    """Bound every later call to a tracking server or database by ``timeout_s`` (default: the last
    value given): MLflow's HTTP settings (the user's own win) and :func:`with_connect_timeout`.
    Returns the bound in effect."""
    global _timeout_s
    if timeout_s:
        _timeout_s = float(timeout_s)
    for key, value in zip(_HTTP_SETTINGS, (str(int(max(1, round(_timeout_s)))), "2", "1"), strict=True):
        if key not in _USER_SET:
            os.environ[key] = value
    return _timeout_s


def with_connect_timeout(uri: str, timeout_s: float | None = None) -> str:
    """A PostgreSQL or MySQL URI with ``connect_timeout`` (unless it sets one); others unchanged."""
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme not in ("postgresql", "postgres", "mysql"):
        return uri
    parts = urlsplit(uri)
    query = dict(parse_qsl(parts.query))
    query.setdefault("connect_timeout", str(int(max(1, round(timeout_s or _timeout_s)))))
    return urlunsplit(parts._replace(query=urlencode(query)))


def is_locked_error(error: BaseException) -> bool:
    """True for SQLite's "database is locked" (as sqlite3, SQLAlchemy or MlflowException)."""
    return any(marker in str(error).lower() for marker in _LOCKED_MARKERS)


def retry_locked(
    call: Callable[[], T],
    *,
    retries: int = LOCK_RETRIES,
    backoff: tuple[float, float] = LOCK_BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``call()``, retried at most ``retries`` times on "database is locked", with jittered
    exponential backoff; any other error, or the last locked one, is raised."""
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as error:
            if attempt == retries or not is_locked_error(error):
                raise
            sleep(min(backoff[1], backoff[0] * 2**attempt) * random.uniform(0.5, 1.5))


#: client methods that write the store, and those that write the artifact root (runtime/sinks.py)
_STORE_WRITES = frozenset(
    ("create_run", "log_batch", "set_terminated", "set_tag", "log_metric", "log_param", "update_run")
    + ("create_experiment", "set_experiment_tag", "delete_tag", "log_inputs")
)
_ARTIFACT_WRITES = frozenset(("log_artifact", "log_artifacts", "log_text", "log_dict", "log_figure", "log_image"))


def _whole(write: Callable[..., T], args: Any, kwargs: Any) -> T:
    """One store write, not cut in half by Ctrl-C or SIGTERM (:func:`dabench.runtime.interrupts.deferred`)."""
    from dabench.runtime.interrupts import deferred

    with deferred():
        return write(*args, **kwargs)


class RetryingClient:
    """An ``MlflowClient`` whose calls are retried on "database is locked" and whose writes are
    redacted (:func:`dabench.tracking.redact.redact_client_call`)."""

    def __init__(self, client: Any, shown: str | None = None):
        self._client, self._shown = client, shown

    @property
    def tracking_uri(self) -> str:
        return self._shown or self._client.tracking_uri

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        sink = "artifacts" if name in _ARTIFACT_WRITES else "store" if name in _STORE_WRITES else None

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = redact_client_call(attr, args, kwargs)
            if sink is not None:
                fault_point(sink)
            return retry_locked(lambda: _whole(attr, args, kwargs) if sink else attr(*args, **kwargs))

        return call


def store_lock(uri: str, timeout_s: float | None = None) -> ContextManager[None]:
    """An exclusive lock on ``<db>.lock`` beside a SQLite store (no-op for other stores);
    TimeoutError after ``timeout_s`` (default 120 s)."""
    db = sqlite_path(uri)
    return nullcontext() if db is None else locked("store", db, timeout_s or 120.0)


#: the experiment tag MLflow's UI reads to choose its view (mlflow/server/js: ``mlflow.experimentKind``);
#: ``custom_model_development`` opens the classic runs table (metrics, params), not the GenAI view
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"


def client_and_experiment(uri: str, experiment: str, timeout_s: float | None = None):
    """(client, experiment id): a :class:`RetryingClient` on ``uri`` and the experiment, created
    when missing; the store is opened (a new one seeded) and the experiment made under :func:`store_lock`."""
    from mlflow.tracking import MlflowClient

    apply_client_timeouts(timeout_s)
    refuse_silent(uri)
    uri = with_connect_timeout(uri, timeout_s)
    with store_lock(uri):
        seed(sqlite_path(uri))
        problem = schema_problem(sqlite_path(uri), redact_uri(uri)) if sqlite_path(uri) else None
        if problem:
            raise WrongStore(f"{redact_uri(uri)}: {problem}")
        client = RetryingClient(MlflowClient(tracking_uri=uri))
        found = client.get_experiment_by_name(experiment)
        if found is None:
            try:
                return client, client.create_experiment(
                    experiment, artifact_location=artifact_root(uri), tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
                )
            except Exception:  # created concurrently by a process on another store lock (a server)
                found = client.get_experiment_by_name(experiment)
                if found is None:
                    raise
        if (
            found.tags.get(EXPERIMENT_KIND_TAG) is None
        ):  # made by an older dabench or another tool: the classic view too
            client.set_experiment_tag(found.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
        return client, found.experiment_id


# a new local SQLite store: a copy of the cached empty schema (see the module docstring)


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
        with closing(sqlite3.connect(db)) as con:
            con.execute("DELETE FROM experiments")  # the Default experiment names this scratch path
            con.commit()
            con.execute("VACUUM")
        copy_file("schema_cache", db, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _valid(path: Path) -> bool:
    """``path`` is an empty MLflow store: a SQLite file with a schema version and no experiment."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            version = con.execute("SELECT version_num FROM alembic_version").fetchall()
            experiments = con.execute("SELECT count(*) FROM experiments").fetchone()[0]
    except sqlite3.Error:
        return False
    return len(version) == 1 and experiments == 0


def seed(db: Path | None) -> bool:
    """Copy the empty schema (made now in :func:`template_path` when missing or damaged) to ``db``
    when it is a SQLite store that does not exist yet (under :func:`store_lock`); True when copied.
    When the schema cannot be kept, a warning, and MLflow makes the schema itself."""
    if db is None or (db.exists() and db.stat().st_size > 0):
        return False
    source = template_path()
    if not (source.is_file() and _valid(source)):
        try:
            _build(source)
        except Exception as error:  # a cache only saves time: any failure leaves the schema to MLflow
            log.warning("empty MLflow schema not cached: %s; MLflow makes the schema itself", one_line(error))
            return False
    copy_file("store", source, db)
    return True
