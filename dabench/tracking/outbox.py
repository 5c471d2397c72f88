"""The outbox: a run's full record kept on local disk while a remote tracking store cannot be
reached, replayed into it exactly once by ``dabench sync`` (and at the next start once it answers).

One journal per run, ``<outbox>/<id>.json``, written atomically at every change; a damaged one is
kept and named, never replayed; one replay per outbox at a time (``<outbox>/sync.lock``).
Guarantees and their tests: docs/reliability.md, "Tracking outages".
"""

from __future__ import annotations

import functools
import os
import sys
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from dabench.core.paths import launch_dir
from dabench.core.readers import DamagedFile, is_number, mapping, read_json
from dabench.core.status import Status, mlflow_state, parse
from dabench.runtime.pids import pid_alive
from dabench.runtime.sinks import copy_tree, locked, make_dir, move, write_json
from dabench.tracking.redact import redact_pair, redact_text, redact_uri
from dabench.tracking.store import client_and_experiment, open_client
from dabench.tracking.writes import create_run, log_child_counts, now_ms, status_tags, write_batch

OUTBOX_ENV = "DABENCH_OUTBOX"
PREFIX = "outbox:"  #: the run id of a run that exists only in the outbox so far
ID_TAG = "dabench.outbox_id"  #: set on every replayed run: a second sync finds it and adds nothing
REMOTE_SCHEMES = ("http", "https", "postgresql", "postgres", "mysql")
_UNREACHABLE = (
    ("connection refused", "max retries exceeded", "failed to establish", "could not connect", "connection aborted")
    + ("remotedisconnected", "connection reset", "timed out", "name or service not known", "connection to server")
    + ("server closed the connection", "temporary failure in name resolution", "does not answer")
)


def outbox_dir() -> Path:
    return Path(os.environ.get(OUTBOX_ENV) or launch_dir() / "mlruns-outbox")


def is_remote(uri: str | None) -> bool:
    return bool(uri) and uri.split(":", 1)[0].split("+", 1)[0].lower() in REMOTE_SCHEMES


def is_unreachable(error: BaseException) -> bool:
    """True when ``error`` says the store could not be reached (not that it refused the request)."""
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        text = f"{type(error).__name__}: {error}".lower()
        if any(marker in text for marker in _UNREACHABLE):
            return True
        error = error.__cause__ or error.__context__
    return False


@contextmanager
def outage_ok(uri: str | None) -> Iterator[None]:
    """Leave the block early, quietly, when it finds the remote store ``uri`` unreachable (the code
    after the block then keeps the record in the outbox); any other error is raised."""
    try:
        yield
    except Exception as error:
        if not (is_remote(uri) and is_unreachable(error)):
            raise


#: a journal's fields and their types
_FIELDS = {
    **dict.fromkeys(("id", "experiment", "run_name"), str),
    **dict.fromkeys(("tags", "params", "metrics", "logged_tags", "acked"), dict),
    "artifacts": list,
}


@dataclass
class Journal:
    """One run's record in the outbox (see the module docstring)."""

    path: Path
    data: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def run_id(self) -> str:
        return self.data.get("server_run_id") or PREFIX + self.id

    @classmethod
    def new(
        cls,
        *,
        uri: str,
        experiment: str,
        run_name: str,
        start_ms: int,
        tags: Mapping[str, Any] | None = None,
        parent: str | None = None,
        server_run_id: str | None = None,
        folder: Path | None = None,
    ) -> "Journal":
        """A new journal, saved, and one line on stderr saying the run went to the outbox."""
        folder = make_dir("outbox", folder or outbox_dir())
        ident = uuid.uuid4().hex
        journal = cls(
            folder / f"{ident}.json",
            {
                "version": 1,
                "id": ident,
                "uri": redact_uri(uri),
                "experiment": experiment,
                "run_name": redact_text(run_name),
                "start_ms": start_ms,
                "tags": {k: redact_pair(k, v) for k, v in (tags or {}).items()},
                "parent": parent or None,
                "server_run_id": server_run_id,
                "params": {},
                "metrics": {},
                "logged_tags": {},
                "artifacts": [],
                "status": None,
                "reason": "",
                "end_ms": None,
                "closed": False,
                "pid": os.getpid(),
                "acked": {"created": server_run_id is not None, "logged": False, "artifacts": False, "closed": False},
            },
        )
        journal.save()
        print(
            f"dabench: the tracking store {redact_uri(uri)} cannot be reached: run {journal.data['run_name']!r} is "
            f"kept in {folder} (dabench sync replays it)",
            file=sys.stderr,
            flush=True,
        )
        return journal

    @classmethod
    def load(cls, path: Path) -> "Journal":
        """The journal in ``path``, version 1, every field typed (NaN metrics kept: MLflow stores
        them); DamagedFile names the first thing wrong."""
        data = mapping(path, read_json(path, 64 * 2**20, allow_nan=True))
        if data.get("version") != 1:
            raise DamagedFile(path, f"version={str(data.get('version'))[:20]!r}: this dabench reads version 1")
        for name, kind in _FIELDS.items():
            if not isinstance(data.get(name), kind):
                raise DamagedFile(path, f"{name} missing or not a {kind.__name__}")
        if Path(path).stem != data["id"]:
            raise DamagedFile(path, f"id={data['id'][:40]!r} is not the file's name")
        for name, value in data["metrics"].items():
            if not is_number(value):
                raise DamagedFile(path, f"metrics.{name}={str(value)[:40]!r}: not a number")
        for name in ("start_ms", "end_ms"):
            value = data.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise DamagedFile(path, f"{name}={str(value)[:40]!r}: not a time in ms")
        if not all(isinstance(v, bool) for v in data["acked"].values()):
            raise DamagedFile(path, "acked holds a value other than true/false")
        return cls(path, data)

    def save(self) -> None:
        """The journal, replaced whole (a crash mid-write leaves the previous version)."""
        write_json("outbox", self.path, self.data, indent=1, sort_keys=True)

    def log(
        self,
        params: Mapping[str, Any] | None = None,
        metrics: Mapping[str, float] | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> None:
        self.data["params"].update({k: redact_pair(k, v) for k, v in (params or {}).items()})
        self.data["metrics"].update({k: float(v) for k, v in (metrics or {}).items() if v is not None})
        self.data["logged_tags"].update({k: redact_pair(k, v) for k, v in (tags or {}).items()})
        self.data["acked"]["logged"] = False
        self.save()

    def add_artifacts(self, folder: Path, artifact_path: str | None = None) -> None:
        target = self.path.parent / self.id / f"artifacts{len(self.data['artifacts'])}"
        copy_tree("outbox", folder, target)
        self.data["artifacts"].append({"folder": str(target.relative_to(self.path.parent)), "path": artifact_path})
        self.data["acked"]["artifacts"] = False
        self.save()

    def close(self, status: Status, reason: str, end_ms: int, status_tags: bool) -> None:
        self.data.update(status=status.value, reason=reason, end_ms=end_ms, closed=True, status_tags=status_tags)
        self.save()

    def end_tags(self) -> dict[str, str]:
        """The ``dabench.status``/``dabench.reason`` tags of a closed run that carries them, else none."""
        data = self.data
        tagged = data.get("closed") and data.get("status_tags", True) and data.get("status")
        return status_tags(data["status"], data.get("reason") or "") if tagged else {}


_synced_once: set[str] = set()


def sync_once(uri: str) -> None:
    """At a process's first run: replay an earlier outage's journals into ``uri`` (once)."""
    if uri in _synced_once or not is_remote(uri):
        return
    _synced_once.add(uri)
    journals, damaged = scan()
    if not damaged and not [j for j in journals if j.data.get("closed")]:
        return
    report = replay(uri, wait_s=0.0)
    if report is not None:
        print(report.line(outbox_dir()), file=sys.stderr, flush=True)


def scan(folder: Path | None = None) -> tuple[list[Journal], list[str]]:
    """(the journals waiting in ``folder``, one line per journal that cannot be read). Reads only."""
    folder = folder or outbox_dir()
    journals, damaged = [], []
    for path in sorted(folder.glob("*.json")):  # none when the folder is missing
        try:
            journals.append(Journal.load(path))
        except DamagedFile as error:
            damaged.append(f"damaged journal kept, not replayed: {error}")
        except OSError as error:
            damaged.append(f"damaged journal kept, not replayed: {path}: {error.strerror or error}")
    return journals, damaged


def describe(journal: Journal) -> str:
    """One line of ``dabench sync --list``: id, run name, state, store, parent, counts."""
    data = journal.data
    if data.get("closed"):
        state = f"closed {data.get('status') or 'ok'}"
    elif pid_alive(int(data.get("pid") or 0)):
        state = f"open (process {data.get('pid')} is writing it)"
    else:
        state = "open (its process ended: replayed as interrupted)"
    parent = f", parent {data['parent']}" if data.get("parent") else ""
    server = f", server run {data['server_run_id']}" if data.get("server_run_id") else ""
    return (
        f"{journal.id}  {data.get('run_name')!r}  {state}  store {data.get('uri')}{server}{parent}  "
        f"{len(data['params'])} params, {len(data['metrics'])} metrics, {len(data['artifacts'])} artifact folders"
    )


def waiting_runs(parent_id: str, folder: Path | None = None) -> list[Any]:
    """The outbox's runs whose parent is ``parent_id``, shaped as the MLflow runs they will become."""
    return [_as_run(journal) for journal in scan(folder)[0] if journal.data.get("parent") == parent_id]


def _as_run(journal: Journal) -> Any:
    """``journal`` shaped as the MLflow run (info, data) it will become."""
    from types import SimpleNamespace

    data = journal.data
    tags = {
        **data["tags"],
        **data["logged_tags"],
        "mlflow.runName": data["run_name"],
        "mlflow.parentRunId": data["parent"],
        **journal.end_tags(),
    }
    info = SimpleNamespace(
        run_id=journal.run_id,
        experiment_id=data["experiment"],
        run_name=data["run_name"],
        status=mlflow_state(parse(data["status"])) if data.get("closed") and data.get("status") else "RUNNING",
        start_time=data.get("start_ms"),
        end_time=data.get("end_ms"),
    )
    return SimpleNamespace(info=info, data=SimpleNamespace(tags=tags, params=data["params"], metrics=data["metrics"]))


def _order(journals: list[Journal]) -> list[Journal]:
    """Parents before their children: a child of a parent kept in the outbox names it ``outbox:<id>``,
    and a parent is always a top-level run (``ParentRun.start``), so one level is all there is."""
    return sorted(journals, key=lambda journal: (journal.data.get("parent") or "").startswith(PREFIX))


@dataclass
class SyncReport:
    synced: int = 0
    already: int = 0
    left: int = 0
    errors: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)

    def line(self, folder: Path) -> str:
        text = (
            f"dabench sync: {self.synced} runs replayed, {self.already} already in the store, "
            f"{self.left} left in {folder}"
        )
        text += f" ({self.errors[0]})" if self.errors else ""
        return "\n".join([text, *(f"dabench sync: {line}" for line in self.damaged)])


#: how long ``dabench sync`` waits for another sync of the same outbox to finish
LOCK_WAIT_S = 600.0


def replay(uri: str, folder: Path | None = None, wait_s: float = LOCK_WAIT_S) -> SyncReport | None:
    """Replay every closed journal (and every journal whose process is gone) kept for the store
    ``uri``, each exactly once, then move it to ``<outbox>/synced/``; journals of another store
    are left and named. None when another sync held the outbox's lock for ``wait_s`` seconds."""
    folder = folder or outbox_dir()
    make_dir("outbox", folder)
    told = f"dabench sync: another dabench sync replays {folder}; waiting for it"
    try:
        with locked("outbox", folder / "sync", wait_s, lambda: print(told, file=sys.stderr, flush=True)):
            return _replay_locked(uri, folder)
    except TimeoutError:
        return None


def _replay_locked(uri: str, folder: Path) -> SyncReport:
    report = SyncReport()
    waiting, report.damaged = scan(folder)
    ours = (None, redact_uri(uri))
    resolved: dict[str, str] = {}  # outbox:<id> -> the run's id in the store
    recount: list[tuple[Any, str]] = []

    @functools.cache
    def client_for(experiment: str) -> tuple[Any, str]:  # "" for a run that exists on the server already
        return client_and_experiment(uri, experiment) if experiment else (open_client(uri), "")

    for journal in (j for j in _order(waiting) if j.data.get("uri") in ours):
        data = journal.data
        if not data["closed"] and pid_alive(int(data.get("pid") or 0)) and data.get("pid") != os.getpid():
            continue  # still being written by a live process
        try:
            client, experiment_id = client_for(data["experiment"])
            already = _replay_one(client, experiment_id, journal, resolved)
        except Exception as error:  # the server went away again: the rest waits for the next sync
            report.errors.append(f"{type(error).__name__}: {str(error)[:200]}")
            if is_unreachable(error):
                break
        else:
            resolved[PREFIX + journal.id] = data["server_run_id"]
            if data.get("recount_children"):
                recount.append((client, data["server_run_id"]))
            report.already += already
            report.synced += not already
            move("outbox", journal.path, make_dir("outbox", folder / "synced") / journal.path.name)
    report.left = len(report.damaged) + len(waiting) - report.synced - report.already  # the rest waits

    for client, run_id in recount:  # a parent closed in the outbox: its children are in the store now
        try:
            log_child_counts(client, run_id, waiting_runs(run_id, folder))
        except Exception as error:
            report.errors.append(f"counting the children of {run_id}: {type(error).__name__}: {error}")
    others = sorted({journal.data["uri"] for journal in waiting if journal.data.get("uri") not in ours})
    if others:
        report.errors.append(
            f"kept for another store: {', '.join(others)}; dabench sync --tracking-uri URI replays them"
        )
    return report


def _replay_one(client, experiment_id: str, journal: Journal, resolved: dict) -> bool:
    """Bring one run's record into the store, step by step, each step acknowledged in the journal
    once done (a crash repeats only the step it interrupted); True when nothing was left to add."""
    data, acked = journal.data, journal.data["acked"]
    untouched = acked["created"] and acked["logged"] and acked["artifacts"] and acked["closed"]

    def created() -> None:  # unacknowledged while the run has no server id (Journal.new)
        found = client.search_runs([experiment_id], filter_string=f"tags.`{ID_TAG}` = '{journal.id}'", max_results=1)
        tags = {**data["tags"], ID_TAG: journal.id}
        if data.get("parent"):
            tags["mlflow.parentRunId"] = resolved.get(data["parent"], data["parent"])
        data["server_run_id"] = (
            found[0].info.run_id
            if found
            else create_run(client, experiment_id, data["start_ms"], data["run_name"], tags)
        )

    def logged() -> None:
        if not data["closed"]:
            data.update(
                status=Status.INTERRUPTED.value,
                end_ms=now_ms(),
                closed=True,
                status_tags=True,
                reason="the process ended before its run was closed (replayed from the outbox)",
            )
        tags = {**data["logged_tags"], ID_TAG: journal.id, **journal.end_tags()}
        write_batch(
            client, data["server_run_id"], data["params"], data["metrics"], tags, timestamp_ms=data.get("end_ms")
        )

    def artifacts() -> None:
        for item in data["artifacts"]:
            folder = str(journal.path.parent / item["folder"])
            client.log_artifacts(data["server_run_id"], folder, artifact_path=item["path"])

    def closed() -> None:
        status = mlflow_state(parse(data["status"] or Status.OK.value))
        client.set_terminated(data["server_run_id"], status=status, end_time=data.get("end_ms") or now_ms())

    for step in (created, logged, artifacts, closed):
        if not acked[step.__name__]:
            step()
            acked[step.__name__] = True
            journal.save()
    return untouched
