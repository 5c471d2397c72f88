"""Fault injection for tests: ``$DABENCH_FAULT`` holds comma-separated ``point[:arg]`` items and
:func:`check` fails (or holds, waits, kills, only counts) at a point it names; never set in normal
use. The points and their arguments: docs/reliability.md, section 2 (fault hooks)."""

from __future__ import annotations

import errno as _errno
import os
import signal
import time

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
    args = _items(point)
    if not args:
        return
    _calls[point] = _calls.get(point, 0) + 1
    for arg in args:
        kind, _, nth = arg.partition("@")  # KIND fires at every call, KIND@N at the N-th (hold, wait: the first)
        if kind in ("hold", "wait"):
            if _calls[point] == int(nth or 1):
                _arrive(point, hold=kind == "hold")
        elif kind == "kill":
            if not nth or _calls[point] == int(nth):
                os.kill(os.getpid(), signal.SIGKILL)
        elif kind.startswith("E") and hasattr(_errno, kind):
            if not nth or _calls[point] == int(nth):
                code = getattr(_errno, kind)
                raise OSError(code, f"{os.strerror(code)} (fault injected at {point})", str(path) if path else None)
        elif arg != "count":
            raise InjectedFault(f"fault injected at {point}: the tracking store is unreachable")


def counts() -> dict[str, int]:
    """Calls of each armed point so far in this process."""
    return dict(_calls)


RANK_FAULT_KINDS = ("kill", "raise", "hang")


def rank_fault(rank: int, step: int) -> None:
    """Fail this rank here when ``$DABENCH_FAULT`` holds ``rank:<rank>@<step>[=kind]``."""
    for arg in _items("rank"):
        target, _, kind = arg.partition("=")
        chosen, _, at = target.partition("@")
        if int(chosen) != rank or int(at or 0) != step:
            continue
        kind = kind or "kill"
        if kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "raise":
            raise RuntimeError(f"injected fault: rank {rank} raised at step {step} ({ENV}=rank:{arg})")
        elif kind == "hang":
            while True:
                time.sleep(60)
        else:
            raise ValueError(f"{ENV}=rank:{arg}: the fault kind must be one of {', '.join(RANK_FAULT_KINDS)}")


def _arrive(point: str, hold: bool) -> None:
    """Tell the test we are here; then wait for a signal (``hold``) or for ``$DABENCH_FAULT_READY.go``."""
    ready = os.environ.get(READY_ENV)
    if ready:
        with open(ready, "a") as handle:
            handle.write(f"{os.getpid()} {_calls[point]}\n")
    while hold:
        signal.pause()
    while ready and not os.path.exists(ready + ".go"):
        time.sleep(0.05)
