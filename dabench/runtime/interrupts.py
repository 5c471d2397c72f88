"""Ctrl-C and SIGTERM: one line, an exit status, and every open record closed.

:func:`install` makes SIGTERM raise :class:`Terminated` (a KeyboardInterrupt), so it unwinds like
Ctrl-C; :func:`on_interrupt` registers closers for records held beyond one run, :func:`progress`
says how far a sweep got; :func:`guard` runs the closers, prints one line (no traceback) and exits
``128 + signal`` (130 SIGINT, 143 SIGTERM). The first signal arms the second: it ends the
process at once (the hooks of :func:`at_exit_now` kill child process groups first).
:func:`in_worker` runs long work (a measured run's steps) in a daemon thread while the main thread
waits, so a signal is acted on within :data:`POLL_S` even while the work sits in a C++ call; the
guard then exits with ``os._exit`` once its closers ran, not waiting for that call.

Derivation: docs/reliability.md, section 3.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")
POLL_S = 0.1  #: how often a main thread waiting on :func:`in_worker` can act on a signal


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another terminating signal) received: unwinds like Ctrl-C."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(f"{signal.Signals(signum).name} received")
        self.signum = signum


@dataclass
class Progress:
    done: int | None = None
    total: int | None = None
    unit: str = "runs"
    resume: str | None = None  #: the command that resumes the work, when there is one


_progress = Progress()
_closers: list[Callable[[], str | None]] = []
_notes: list[str] = []
_exit_now_hooks: list[Callable[[], None]] = []
_abandoned: list[threading.Event] = []  #: set when a worker, running when a signal came, is done


def note(text: str) -> None:
    """Add ``text`` to the interrupt line (e.g. which run was recorded interrupted)."""
    _notes.append(text)


def at_exit_now(hook: Callable[[], None]) -> None:
    """``hook`` (quick, e.g. killing child process groups) runs before a second signal's exit."""
    _exit_now_hooks.append(hook)


def _exit_now(signum: int, frame) -> None:
    """A second signal: kill what the hooks kill and end the process, closing nothing more."""
    for hook in list(_exit_now_hooks):
        try:
            hook()
        except Exception:  # noqa: BLE001 - exiting regardless
            pass
    os.write(2, f"dabench: second {signal.Signals(signum).name}: exiting now\n".encode())
    os._exit(128 + signum)


def _arm_second(signum: int) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        if sig == signal.SIGTERM or signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _exit_now)


def _raise_terminated(signum: int, frame) -> None:
    _arm_second(signum)
    raise Terminated(signum)


def _raise_interrupt(signum: int, frame) -> None:
    _arm_second(signum)
    raise KeyboardInterrupt


def install() -> None:
    """SIGTERM raises :class:`Terminated` in the main thread, SIGINT KeyboardInterrupt (an ignored
    SIGINT, e.g. under nohup, stays ignored); either arms the next signal to exit at once."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _raise_interrupt)


def in_worker(fn: Callable[[], T], name: str = "dabench-work") -> T:
    """``fn()`` run in a daemon thread while this (main) thread waits, polling every
    :data:`POLL_S`: a signal raises here at once, wherever ``fn`` is. The worker is then abandoned
    (it ends with the process). Off the main thread, ``fn()`` is called directly."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    box: dict[str, object] = {}
    done = threading.Event()  # not Thread.join: an interrupted join can mark a running thread stopped

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = error
        finally:
            done.set()

    threading.Thread(target=target, name=name, daemon=True).start()
    try:
        while not done.wait(POLL_S):
            pass
    except BaseException:
        _abandoned.append(done)
        raise
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def on_interrupt(closer: Callable[[], str | None]) -> Callable[[], None]:
    """Run ``closer`` if the process is interrupted (it may return a note for the line); returns
    a function that unregisters it (call it when the record was closed normally)."""
    _closers.append(closer)

    def remove() -> None:
        if closer in _closers:
            _closers.remove(closer)

    return remove


def progress(
    done: int | None = None, total: int | None = None, unit: str | None = None, resume: str | None = None
) -> Progress:
    """Update (the given fields of) how far the current work got; returns it."""
    if done is not None:
        _progress.done = done
    if total is not None:
        _progress.total = total
    if unit is not None:
        _progress.unit = unit
    if resume is not None:
        _progress.resume = resume
    return _progress


#: masks secrets in the command line shown to resume (set by a higher layer: mask_with)
_mask: Callable[[str], str] = str


def mask_with(mask: Callable[[str], str]) -> None:
    """Show :func:`command_line` through ``mask`` (dabench.tracking.redact.redact_text)."""
    global _mask
    _mask = mask


def command_line() -> str:
    """This process's command line as the user would type it again (``python -m dabench ...``),
    through the mask set by :func:`mask_with`."""
    args = sys.argv[1:]
    head = (
        "python -m dabench"
        if sys.argv and sys.argv[0].endswith("__main__.py")
        else os.path.basename(sys.argv[0] or "dabench")
    )
    return _mask(" ".join([head, *map(shlex.quote, args)]))


def exit_code(error: BaseException) -> int:
    return 128 + int(getattr(error, "signum", signal.SIGINT))


def message(error: BaseException, notes: list[str]) -> str:
    """The one line: what stopped, how far it got, what was closed, how to go on."""
    what = "terminated (SIGTERM)" if isinstance(error, Terminated) else "interrupted"
    p = _progress
    line = f"dabench: {what}"
    if p.total is not None:
        line += f" after {p.done or 0} of {p.total} {p.unit}"
    if notes:
        line += "; " + "; ".join(notes)
    if p.resume:
        line += f"; resume with: {p.resume}"
    elif p.total is not None:
        line += f"; run again with: {command_line()}"
    return line


def run_closers() -> list[str]:
    """Run every registered closer (last registered first); returns their notes."""
    notes = list(_notes)
    while _closers:
        closer = _closers.pop()
        try:
            note = closer()
        except BaseException as error:  # noqa: BLE001 - a second Ctrl-C or a dead store: say so, go on
            note = f"could not close a record ({type(error).__name__}: {error})"
        if note:
            notes.append(note)
    return notes


@contextmanager
def guard() -> Iterator[None]:
    """Around the Hydra entry: an interrupt ends the process with one line and 128 + signal."""
    previous_int = signal.getsignal(signal.SIGINT)
    install()
    try:
        yield
    except KeyboardInterrupt as error:
        notes = run_closers()
        print(message(error, notes), file=sys.stderr, flush=True)
        if not all(done.is_set() for done in _abandoned):  # a worker is inside a long call: do not wait for it
            sys.stdout.flush()
            os._exit(exit_code(error))
        raise SystemExit(exit_code(error)) from None
    finally:
        if threading.current_thread() is threading.main_thread() and previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
