"""Ctrl-C and SIGTERM: one line, exit status 128 + signal, and every open record closed.

:func:`install` makes SIGTERM unwind like Ctrl-C; :func:`guard` runs the closers registered by
:func:`on_interrupt` and prints the line; a second signal exits at once (after the
:func:`at_exit_now` hooks). :func:`in_worker` runs long work in a daemon thread so a signal is
acted on within :data:`POLL_S`. docs/reliability.md, section 3."""

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
    """A second signal: run the hooks and end the process, closing nothing more."""
    for hook in list(_exit_now_hooks):
        try:
            hook()
        except Exception:  # noqa: BLE001 - exiting regardless
            pass
    os.write(2, f"dabench: second {signal.Signals(signum).name}: exiting now\n".encode())
    os._exit(128 + signum)


def _arm() -> None:
    """The next SIGINT (unless ignored) or SIGTERM exits at once (:func:`_exit_now`)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if sig == signal.SIGTERM or signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _exit_now)


def _raise(signum: int, frame) -> None:
    _arm()
    if _deferring:  # inside a store write: raised when it ends (:func:`deferred`)
        _pending.append(signum)
        return
    _unwind(signum)


def _unwind(signum: int) -> None:
    raise Terminated(signum) if signum == signal.SIGTERM else KeyboardInterrupt


_deferring = 0  #: depth of :func:`deferred` blocks in the main thread
_pending: list[int] = []  #: a signal that came inside one


@contextmanager
def deferred() -> Iterator[None]:
    """A signal that comes inside the block takes effect as the block ends, so a store write is never
    cut in half (an interrupted SQLite write left its transaction open: the closers' writes then
    found the database locked); a second signal still exits at once. Off the main thread: as is."""
    global _deferring
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if not _deferring and _pending:
            signum = _pending.pop()
            _pending.clear()
            _unwind(signum)


def install() -> None:
    """SIGTERM raises :class:`Terminated` in the main thread, SIGINT KeyboardInterrupt (unless
    ignored); either arms the next signal to exit at once."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _raise)


def in_worker(fn: Callable[[], T], name: str = "dabench-work") -> T:
    """``fn()`` in a daemon thread while the main thread waits (a signal raises here at once and
    the worker is abandoned); off the main thread, ``fn()`` directly."""
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
    """Run ``closer`` (which may return a note) if the process is interrupted; returns its remover."""
    _closers.append(closer)

    def remove() -> None:
        if closer in _closers:
            _closers.remove(closer)

    return remove


def progress(**fields: int | str | None) -> Progress:
    """Update the given fields (done, total, unit, resume) of how far the work got; returns it."""
    for name, value in fields.items():
        if value is not None:
            setattr(_progress, name, value)
    return _progress


_mask: Callable[[str], str] = str


def mask_with(mask: Callable[[str], str]) -> None:
    """Show :func:`command_line` through ``mask`` (dabench.tracking.redact.redact_text)."""
    global _mask
    _mask = mask


def command_line() -> str:
    """This process's command line as the user would type it again, masked."""
    args = sys.argv[1:]
    head = (
        "python -m dabench"
        if sys.argv and sys.argv[0].endswith("__main__.py")
        else os.path.basename(sys.argv[0] or "dabench")
    )
    return _mask(" ".join([head, *map(shlex.quote, args)]))


def message(error: BaseException, notes: list[str], prog: str = "dabench") -> str:
    """The one line: what stopped, how far it got, what was closed, how to go on."""
    what = "terminated (SIGTERM)" if isinstance(error, Terminated) else "interrupted"
    p = _progress
    line = f"{prog}: {what}"
    if p.total is not None:
        line += f" after {p.done or 0} of {p.total} {p.unit}"
    if notes:
        line += "; " + "; ".join(notes)
    if p.resume:
        line += f"; resume with: {p.resume}"
    elif p.total is not None:
        line += f"; run again with: {command_line()}"
    return line


@contextmanager
def guard(prog: str = "dabench") -> Iterator[None]:
    """Around the Hydra entry and every subcommand (``prog``): an interrupt ends the process with
    one line and 128 + signal."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    install()
    try:
        yield
    except KeyboardInterrupt as error:
        if threading.current_thread() is threading.main_thread():
            _arm()  # however the first came (Python's own Ctrl-C handler too): a signal while closing exits now
        notes = list(_notes)
        while _closers:  # every registered closer, last registered first
            closer = _closers.pop()
            try:
                note = closer()
            except BaseException as failure:  # noqa: BLE001
                note = f"could not close a record ({type(failure).__name__}: {failure})"
            if note:
                notes.append(note)
        print(message(error, notes, prog), file=sys.stderr, flush=True)
        code = 128 + int(getattr(error, "signum", signal.SIGINT))
        if not all(done.is_set() for done in _abandoned):
            sys.stdout.flush()
            os._exit(code)
        raise SystemExit(code) from None
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in previous.items():
                if handler is not None:
                    signal.signal(sig, handler)
