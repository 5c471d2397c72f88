"""Fault injection for tests: named points where a test makes dabench fail on purpose.

``$DABENCH_FAULT`` holds comma-separated ``point[:arg]`` items; :func:`check` is called at each
point and does nothing unless its point is named (one environment lookup: no cost otherwise).

Points and what they do:

- ``artifacts:ERRNO`` (e.g. ``artifacts:ENOSPC``, ``artifacts:EROFS``): writing a run's artifact
  folder raises ``OSError(ERRNO)`` (a full disk, a read-only folder).
- ``log_artifacts:ERRNO``: copying the artifacts into the tracking store raises ``OSError``.
- ``tracking_log``: logging params/metrics/tags to the run store raises (the store became
  unreachable after pre-flight); ``tracking_close``: so does closing the run (the store is gone
  for good: the run is left RUNNING for the reaper).
- ``run_body:hold`` or ``run_body:hold@N``: the N-th run of this process (default 1) stops after
  its MLflow run is open and before any work: it appends ``<pid> <n>`` to the file named by
  ``$DABENCH_FAULT_READY`` and waits for a signal (the test then sends SIGINT, SIGTERM or
  SIGKILL). A barrier, not a sleep: the test acts only once the file says the run is there.
- ``rank:R@S`` or ``rank:R@S=KIND`` (KIND ``kill``, ``raise`` or ``hang``; default ``kill``): rank R
  of a measured parallel run fails at the start of its step S (0-based, warm-up steps included):
  SIGKILL itself, raise a RuntimeError, or hang until the launcher's timeout ends it.

Used by tests/ (docs/reliability.md); never set in normal use.
"""

from __future__ import annotations

import errno as _errno
import os

ENV = "DABENCH_FAULT"
READY_ENV = "DABENCH_FAULT_READY"

_calls: dict[str, int] = {}


class InjectedFault(ConnectionError):
    """A fault raised on purpose at a named point (the tracking store 'unreachable')."""


def _items(point: str) -> list[str]:
    spec = os.environ.get(ENV)
    if not spec:
        return []
    return [arg for name, _, arg in (item.strip().partition(":") for item in spec.split(",")) if name == point]


def check(point: str, path: str | os.PathLike | None = None) -> None:
    """Fail (or hold) here when ``$DABENCH_FAULT`` names ``point`` (see the module docstring)."""
    if ENV not in os.environ:
        return
    args = _items(point)
    if not args:
        return
    _calls[point] = _calls.get(point, 0) + 1
    for arg in args:
        if arg.startswith("hold"):
            _, _, nth = arg.partition("@")
            if _calls[point] == int(nth or 1):
                _hold(point)
        elif arg.startswith("E") and hasattr(_errno, arg):
            code = getattr(_errno, arg)
            raise OSError(code, f"{os.strerror(code)} (fault injected at {point})", str(path) if path else None)
        else:
            raise InjectedFault(f"fault injected at {point}: the tracking store is unreachable")


RANK_FAULT_KINDS = ("kill", "raise", "hang")


def rank_fault(rank: int, step: int) -> None:
    """Fail this rank here when ``$DABENCH_FAULT`` holds ``rank:<rank>@<step>[=kind]``."""
    if ENV not in os.environ:
        return
    for arg in _items("rank"):
        target, _, kind = arg.partition("=")
        chosen, _, at = target.partition("@")
        if int(chosen) != rank or int(at or 0) != step:
            continue
        kind = kind or "kill"
        if kind == "kill":
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "raise":
            raise RuntimeError(f"injected fault: rank {rank} raised at step {step} ({ENV}=rank:{arg})")
        elif kind == "hang":
            import time

            while True:
                time.sleep(60)
        else:
            raise ValueError(f"{ENV}=rank:{arg}: the fault kind must be one of {', '.join(RANK_FAULT_KINDS)}")


def _hold(point: str) -> None:
    """Tell the test we are here, then wait for a signal (its handler raises, or it kills us)."""
    import signal

    ready = os.environ.get(READY_ENV)
    if ready:
        with open(ready, "a") as handle:
            handle.write(f"{os.getpid()} {_calls[point]}\n")
    while True:
        signal.pause()
