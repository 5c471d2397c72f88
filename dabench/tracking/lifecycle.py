"""One run lifecycle: open the MLflow run when the work starts, close it on every exit path.

Every run gets its real start and end times and an MLflow state from its status: ``ok`` ->
FINISHED, an exception -> FAILED ``crashed``, an interrupt -> KILLED ``interrupted`` (both
re-raised). Contract: docs/architecture.md, "Run lifecycle"; docs/reliability.md, section 2.
"""

from __future__ import annotations

import logging
import os
import traceback
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from dabench.core.paths import launch_dir
from dabench.core.status import DabenchError, Status, mlflow_state, parse
from dabench.runtime import faults, interrupts
from dabench.tracking import outbox
from dabench.tracking.reaper import owner_tags, reap_once
from dabench.tracking.store import client_and_experiment, tracking_uri
from dabench.tracking.writes import (
    MAX_TAG_CHARS,
    create_run,
    log_child_counts,
    now_ms,
    status_tags,
    write_batch,
)

log = logging.getLogger(__name__)

PARENT_ENV = "DABENCH_PARENT_RUN_ID"
#: runs this process could not close (run id -> the error): a command ends non-zero naming them
UNCLOSED: dict[str, str] = {}


@lru_cache(maxsize=None)
def git_commit(path: Path) -> str:
    """HEAD of the repository at ``path``, once per process."""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@lru_cache(maxsize=None)
def package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def standard_tags(parent_id: str | None) -> dict[str, str]:
    """Tags every dabench run carries: torch version, git commit, owner, and the parent when any."""
    tags = {
        "dabench.torch_version": package_version("torch"),
        "dabench.git_commit": git_commit(launch_dir()),
        **owner_tags(),
    }
    if parent_id:
        tags["mlflow.parentRunId"] = parent_id
    return tags


@dataclass
class RecordedRun:
    """An open MLflow run; its record goes to the outbox once the remote store cannot be reached."""

    client: Any
    run_id: str
    experiment_id: str
    start_ms: int
    status: Status | None = None
    reason: str = ""
    closed: bool = False
    #: also write the dabench.status / dabench.reason tags when closing (runs; not parents)
    status_tags: bool = True
    #: where the record goes while the server cannot be reached (dabench/tracking/outbox.py)
    offline: Any = None
    uri: str = ""
    experiment: str = ""
    run_name: str = ""

    def _online(self, write: Callable[[], None]) -> bool:
        """``write()`` into the store; False when the record goes to the outbox instead: from the
        first write that finds a remote store unreachable on (any other error is raised)."""
        if self.offline is None:
            with outbox.outage_ok(self.uri):
                write()
                return True
            self.offline = outbox.Journal.new(
                uri=self.uri,
                experiment=self.experiment,
                run_name=self.run_name,
                start_ms=self.start_ms,
                server_run_id=self.run_id,
            )
        return False

    def log(self, params: Mapping | None = None, metrics: Mapping | None = None, tags: Mapping | None = None) -> None:
        def write() -> None:
            faults.check("tracking_log")
            write_batch(self.client, self.run_id, params, metrics, tags)

        if not self._online(write):
            self.offline.log(params, metrics, tags)

    def log_artifacts(self, folder: Path | None, artifact_path: str | None = None) -> None:
        if folder is None or not Path(folder).exists():
            return

        def write() -> None:
            faults.check("log_artifacts", folder)
            self.client.log_artifacts(self.run_id, str(folder), artifact_path=artifact_path)

        if not self._online(write):
            self.offline.add_artifacts(Path(folder), artifact_path)

    def set_status(self, status: Status | str, reason: str = "") -> None:
        self.status, self.reason = parse(status), reason

    def close(self, status: Status | str | None = None, reason: str | None = None) -> None:
        """End the run now in ``mlflow_state(status)``, with the status tags when the run carries
        them. Closing twice does nothing."""
        if self.closed:
            return
        faults.check("tracking_close")
        if status is not None:
            self.status = parse(status)
        if reason is not None:
            self.reason = reason
        status, tagged = self.status or Status.OK, self.status_tags and self.status is not None
        end_ms = now_ms()

        def write() -> None:
            if tagged:
                write_batch(self.client, self.run_id, tags=status_tags(status.value, self.reason))
            self.client.set_terminated(self.run_id, status=mlflow_state(status), end_time=end_ms)

        if not self._online(write):
            self.offline.close(status, self.reason, end_ms, tagged)
        self.closed = True


def open_run(
    *,
    experiment: str,
    uri: str | None,
    run_name: str,
    tags: Mapping[str, Any] | None = None,
    parent_id: str | None = None,
    standard: bool = True,
) -> RecordedRun:
    """Create the run now, a child of ``parent_id`` or of
    ``$DABENCH_PARENT_RUN_ID``, with :func:`standard_tags` (when ``standard``) and ``tags``."""
    resolved = tracking_uri(uri)
    parent = parent_id if parent_id is not None else os.environ.get(PARENT_ENV)
    all_tags = {**(standard_tags(parent) if standard else owner_tags()), **(tags or {})}
    if parent and not standard:
        all_tags["mlflow.parentRunId"] = parent
    start = now_ms()
    where = {"uri": resolved, "experiment": experiment, "run_name": run_name}
    if not (parent or "").startswith(outbox.PREFIX):  # a child of an outbox parent waits with it
        with outbox.outage_ok(resolved):
            client, experiment_id = client_and_experiment(resolved, experiment)
            reap_once(client, resolved)  # runs of this host left RUNNING by dead processes (once per process)
            outbox.sync_once(resolved)  # an earlier outage's records, now that the server answers
            run_id = create_run(
                client, experiment_id, start, run_name, {k: str(v)[:MAX_TAG_CHARS] for k, v in all_tags.items()}
            )
            return RecordedRun(client, run_id, experiment_id, start, **where)
    tags_kept = {k: v for k, v in all_tags.items() if k != "mlflow.parentRunId"}
    journal = outbox.Journal.new(
        uri=resolved, experiment=experiment, run_name=run_name, start_ms=start, tags=tags_kept, parent=parent
    )
    return RecordedRun(None, journal.run_id, "", start, offline=journal, **where)


@dataclass
class ParentRun(RecordedRun):
    """The one parent run of a multirun, grid, study or advice: opened (:meth:`start`) or adopted
    from an earlier invocation (:meth:`adopt`), closed once by :meth:`finish` with its children's
    counts (``jobs.total``, ``jobs.<status>``, ``jobs.best_samples_per_s``); a context manager
    that finishes it on every exit path. While a remote store cannot be reached its record waits
    in the outbox, and ``dabench sync`` counts its children."""

    kind: str = "parent"
    adopted: bool = False

    @classmethod
    def start(
        cls,
        kind: str,
        *,
        experiment: str,
        uri: str | None,
        run_name: str,
        note: str,
        mode: str | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> "ParentRun":
        """A new top-level parent of ``kind``, tagged ``dabench.parent``, ``dabench.parent_kind``,
        the git commit, ``note`` and ``mode``."""
        marks = {
            "dabench.parent": "true",
            "dabench.parent_kind": kind,
            "mlflow.note.content": note,
            "dabench.git_commit": git_commit(launch_dir()),
        }
        if mode:
            marks["dabench.mode"] = mode
        run = open_run(
            experiment=experiment,
            uri=uri,
            run_name=run_name,
            parent_id="",
            standard=False,
            tags={**marks, **(tags or {})},
        )
        return cls(**{**vars(run), "status_tags": False}, kind=kind)  # its outcome: its children's counts

    @classmethod
    def adopt(cls, client: Any, run_id: str, uri: str, experiment: str = "") -> "ParentRun | None":
        """Parent ``run_id`` of an earlier invocation, RUNNING again and held by this process;
        None when the store no longer has it active."""
        try:
            found = client.get_run(run_id)
        except Exception:
            return None
        if found.info.lifecycle_stage != "active":
            return None
        if found.info.status != "RUNNING":
            client.update_run(run_id, status="RUNNING")
        write_batch(client, run_id, tags=owner_tags())  # this process now holds it (the reaper checks it)
        start, kind = found.info.start_time or now_ms(), found.data.tags.get("dabench.parent_kind", "parent")
        return cls(
            client,
            run_id,
            found.info.experiment_id,
            start,
            status_tags=False,
            kind=kind,
            adopted=True,
            uri=uri,
            experiment=experiment,
            run_name=found.info.run_name or "",
        )

    def finish(
        self, status: Status | str = Status.OK, reason: str = "", outcomes: Sequence[tuple[str, Any]] | None = None
    ) -> dict[str, int]:
        """Log the children's counts (from ``outcomes``, (status, samples/s) of each, else from the
        store and the outbox), then close in ``status``; returns the counts. Finishing twice does
        nothing."""
        if self.closed:
            return {}
        status, counts = parse(status), {}

        def write() -> None:
            nonlocal counts
            waiting = outbox.waiting_runs(self.run_id) if outcomes is None else ()
            counts = log_child_counts(self.client, self.run_id, waiting, outcomes)

        if not self._online(write):
            self.offline.data["recount_children"] = True
        if status is not Status.OK:  # the parent names why it ended early
            self.status_tags = True
            reason = reason or f"the {self.kind} was interrupted (Ctrl-C or SIGTERM) after {sum(counts.values())} runs"
        elif self.adopted and self.offline is None:  # an earlier invocation's interrupted tags no longer hold
            for key in ("dabench.status", "dabench.reason"):
                with suppress(Exception):
                    self.client.delete_tag(self.run_id, key)
        self.close(status, reason)
        return counts

    def __enter__(self) -> "ParentRun":
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        if error is None:
            self.finish()
        elif isinstance(error, Exception):
            quietly(self.finish, self, error_status(error), f"{type(error).__name__}: {error}")
        else:  # KeyboardInterrupt (Ctrl-C, SIGTERM), SystemExit: how far it came
            quietly(self.finish, self, Status.INTERRUPTED, "")


@contextmanager
def recorded_run(
    *,
    experiment: str,
    uri: str | None,
    run_name: str,
    tags: Mapping[str, Any] | None = None,
    parent_id: str | None = None,
    status_tags: bool = True,
) -> Iterator[RecordedRun]:
    """Open a run at entry and close it on every exit path (see the module docstring)."""
    run = open_run(experiment=experiment, uri=uri, run_name=run_name, tags=tags, parent_id=parent_id)
    run.status_tags = status_tags
    try:
        yield run
    except BaseException as error:  # also KeyboardInterrupt (Ctrl-C, SIGTERM: runtime/interrupts.py), SystemExit
        run.status_tags = True
        if isinstance(error, Exception):
            quietly(
                run.close,
                run,
                error_status(error),
                f"{type(error).__name__}: {error}\n{traceback.format_exc()[-2000:]}",
            )
        else:
            quietly(run.close, run, Status.INTERRUPTED, interrupt_reason(error))
        if isinstance(error, KeyboardInterrupt):
            interrupts.note(f"run {run.run_id} recorded interrupted ({'KILLED' if run.closed else 'left RUNNING'})")
        raise
    else:
        try:
            run.close()
        except Exception as error:  # the store went away: the caller learns it; the reaper ends the run later
            log.warning("could not close MLflow run %s: %s", run.run_id, error)
            UNCLOSED[run.run_id] = str(error)


def error_status(error: BaseException) -> Status:
    """A DabenchError's own status; ``disk_full`` for a full disk (errno or SQLite's message);
    else ``crashed``."""
    import errno

    if isinstance(error, DabenchError):
        return error.status
    full = ("database or disk is full", "no space left on device")
    if (isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)) or any(
        marker in str(error).lower() for marker in full
    ):
        return Status.DISK_FULL
    return Status.CRASHED


def write_error_status(error: BaseException) -> Status:
    """The status of a run whose record could not be written: ``disk_full`` or ``tracking_error``."""
    return Status.DISK_FULL if error_status(error) is Status.DISK_FULL else Status.TRACKING_ERROR


def interrupt_reason(error: BaseException) -> str:
    detail = str(error)
    return f"{type(error).__name__}{f' ({detail})' if detail else ''} while the run was open"


def quietly(close: Callable[[Status, str], Any], run: RecordedRun, status: Status, reason: str) -> None:
    """``close(status, reason)`` while unwinding; a failure to record must not hide the error."""
    try:
        close(status, reason)
    except Exception as error:  # the store itself failing
        log.warning("could not close MLflow run %s as %s: %s", run.run_id, status.value, error)


@dataclass
class PendingRun:
    """One run of a :class:`BatchRecorder`, held in memory until the batch is written."""

    run_name: str
    start_ms: int
    params: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    status: Status = Status.OK
    reason: str = ""
    end_ms: int | None = None

    def set_status(self, status: Status | str, reason: str = "") -> None:
        self.status, self.reason = parse(status), reason


class BatchRecorder:
    """Many in-process runs written ``flush_every`` at a time, each with its real start and end
    times (``with batch.run(name) as r:``, or :meth:`add` with explicit times); leaving the block
    writes the rest. :attr:`run_ids`: the ids written, in order."""

    def __init__(
        self,
        *,
        experiment: str,
        uri: str | None = None,
        parent_id: str | None = None,
        flush_every: int = 100,
    ):
        self.experiment, self.uri, self.flush_every = experiment, uri, flush_every
        self.parent_id = parent_id if parent_id is not None else os.environ.get(PARENT_ENV)
        self.pending: list[PendingRun] = []
        self.run_ids: list[str] = []
        self._client = None
        self._experiment_id: str | None = None

    def __enter__(self) -> "BatchRecorder":
        return self

    def __exit__(self, *exc) -> None:
        self.flush()

    @contextmanager
    def run(self, run_name: str) -> Iterator[PendingRun]:
        pending = PendingRun(run_name, now_ms())
        try:
            yield pending
        except Exception as error:
            pending.set_status(Status.CRASHED, f"{type(error).__name__}: {error}")
            raise
        except BaseException as error:
            pending.set_status(Status.INTERRUPTED, interrupt_reason(error))
            raise
        finally:
            pending.end_ms = now_ms()
            self.add(pending)

    def add(self, pending: PendingRun) -> None:
        """A finished run with its own ``start_ms`` and ``end_ms``."""
        self.pending.append(pending)
        if len(self.pending) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Write every pending run: created at its start time, logged, ended at its end time; their
        ids join :attr:`run_ids`."""
        if not self.pending:
            return
        resolved = tracking_uri(self.uri)
        online = not (self.parent_id or "").startswith(outbox.PREFIX)  # a child of an outbox parent waits with it
        if online and self._client is None:
            with outbox.outage_ok(resolved):
                self._client, self._experiment_id = client_and_experiment(resolved, self.experiment)
                reap_once(self._client, resolved)
            online = self._client is not None
        standard = standard_tags(self.parent_id)  # the outbox keeps the parent apart (journal.log below)
        pending, self.pending = self.pending, []
        for i, p in enumerate(pending):
            tags = {**standard, **p.tags, **status_tags(p.status.value, p.reason)}
            end = p.end_ms if p.end_ms is not None else now_ms()
            created = None
            if online:
                try:
                    with outbox.outage_ok(resolved), interrupts.deferred():  # a run written whole or not at all
                        created = create_run(self._client, self._experiment_id, p.start_ms, p.run_name)
                        write_batch(self._client, created, p.params, p.metrics, tags, timestamp_ms=end)
                        self._client.set_terminated(created, status=mlflow_state(p.status), end_time=end)
                        self.run_ids.append(created)
                        continue
                except BaseException:  # Ctrl-C, SIGTERM between its writes: that run ended, the rest kept
                    if created is not None and created not in self.run_ids:
                        with suppress(Exception):
                            self._client.set_terminated(created, status=mlflow_state(Status.INTERRUPTED))
                    self.pending = pending[i + 1 :] + self.pending
                    raise
                online = False
            journal = outbox.Journal.new(
                uri=resolved,
                experiment=self.experiment,
                run_name=p.run_name,
                start_ms=p.start_ms,
                parent=self.parent_id,
                server_run_id=created,
            )
            journal.log(p.params, p.metrics, {k: v for k, v in tags.items() if k != "mlflow.parentRunId"})
            journal.close(p.status, "", end, status_tags=False)
            self.run_ids.append(journal.run_id)
