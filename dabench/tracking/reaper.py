"""Runs whose process is gone: found by their owner tags and ended KILLED (status ``killed``).

Every run carries its host, pid and process key (boot id and start ticks: a reused pid or a reboot
is told apart). Derivation: docs/reliability.md, section 2.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dabench.core.status import Status, mlflow_state
from dabench.runtime.pids import pid_alive, start_ticks
from dabench.tracking.store import search_all
from dabench.tracking.writes import now_ms, status_tags, write_batch

log = logging.getLogger(__name__)

HOST_TAG, PID_TAG = "dabench.host", "dabench.pid"
START_TAG, KEY_TAG = "dabench.process_start", "dabench.process_key"

_reaped: set[str] = set()


def hostname() -> str:
    return socket.gethostname()


@lru_cache(maxsize=1)
def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"


def process_key(pid: int) -> str | None:
    ticks = start_ticks(pid)
    return None if ticks is None else f"{boot_id()}:{ticks}"


def _start_iso(ticks: int | None) -> str:
    try:
        with open("/proc/stat") as handle:
            btime = next(int(line.split()[1]) for line in handle if line.startswith("btime"))
        seconds = btime + (ticks or 0) / os.sysconf("SC_CLK_TCK")
        return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(timespec="seconds")
    except (OSError, StopIteration, ValueError):
        return "unknown"


@lru_cache(maxsize=4)
def _owner_tags(pid: int) -> tuple[tuple[str, str], ...]:
    key = process_key(pid) or "unknown"
    return ((HOST_TAG, hostname()), (PID_TAG, str(pid)), (START_TAG, _start_iso(start_ticks(pid))), (KEY_TAG, key))


def owner_tags() -> dict[str, str]:
    """This process as the owner of a run (see the module docstring)."""
    return dict(_owner_tags(os.getpid()))


def process_alive(pid: int, key: str | None) -> bool:
    """Whether the process ``pid`` that had ``key`` (see :func:`process_key`) still runs here."""
    if not pid_alive(pid):
        return False
    if not key or key == "unknown":
        return True  # cannot tell a reused pid: leave it alone
    now = process_key(pid)
    return now is None or now == key


@dataclass(frozen=True)
class Reaped:
    run_id: str
    experiment_id: str
    run_name: str
    reason: str

    def __str__(self) -> str:
        return f"run {self.run_id} ({self.run_name}) RUNNING -> KILLED: {self.reason}"


def _gone_reason(tags: dict[str, str], all_hosts: bool) -> str | None:
    """Why the run's owner is gone, or None when it may still run (or is not ours to judge)."""
    host, pid = tags.get(HOST_TAG), tags.get(PID_TAG)
    started = tags.get(START_TAG, "unknown")
    if host is None or pid is None or not pid.isdigit():
        why = "no owner recorded (run by an older dabench or another tool)"
    elif host != hostname():
        why = f"process {pid} on {host} (started {started}) not checked from {hostname()}"
    elif process_alive(int(pid), tags.get(KEY_TAG)):
        return None
    else:
        return f"process {pid} on {host} (started {started}) ended without closing the run (killed or lost power)"
    return f"{why}; ended on request (--all-hosts)" if all_hosts else None


def running_runs(client: Any, host: str | None) -> list[Any]:
    """RUNNING runs in every experiment of the store, only ``host``'s when given."""
    query = "attributes.status = 'RUNNING'"
    if host is not None:
        query += f" and tags.`{HOST_TAG}` = '{host}'"
    return search_all(client, [e.experiment_id for e in client.search_experiments()], query)


def reap(client: Any, *, all_hosts: bool = False, dry_run: bool = False) -> list[Reaped]:
    """End KILLED every RUNNING run of this host whose process is gone (``all_hosts``: also other
    hosts' runs and runs without owner); returns what was (``dry_run``: would be) ended."""
    done = []
    for run in running_runs(client, None if all_hosts else hostname()):
        reason = _gone_reason(run.data.tags, all_hosts)
        if reason is None:
            continue
        if not dry_run:
            write_batch(client, run.info.run_id, tags=status_tags(Status.KILLED.value, reason))
            client.set_terminated(run.info.run_id, status=mlflow_state(Status.KILLED), end_time=now_ms())
        done.append(Reaped(run.info.run_id, run.info.experiment_id, run.info.run_name or "", reason))
    return done


def reap_once(client: Any, uri: str) -> list[Reaped]:
    """:func:`reap` for this host, once per process and store ``uri``; a failure is a warning."""
    if uri in _reaped or os.environ.get("DABENCH_NO_REAPER"):
        return []
    _reaped.add(uri)
    try:
        found = reap(client)
    except Exception as error:  # the run itself will meet a broken store and say so
        log.warning("could not look for runs left RUNNING by dead processes: %s", error)
        return []
    for item in found:
        log.warning("marked %s", item)
    return found
