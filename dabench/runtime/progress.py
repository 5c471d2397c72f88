"""Progress lines on stderr: :class:`SweepProgress` (jobs of a multirun, study or grid) and
:class:`StepProgress` (the steps of a measured run: announced when long, stopped with RunTimeout
past ``run.max_minutes``). A tqdm bar on a TTY, else throttled plain lines; ``$DABENCH_PROGRESS``:
``auto``, ``bar``, ``lines`` or ``off``."""

from __future__ import annotations

import logging
import os
import shlex
import sys
import time
from typing import Callable, TextIO

from dabench.core.status import RunTimeout

log = logging.getLogger("dabench")

LONG_RUN_S = 120.0  #: a measured run estimated longer than this is announced with a warning
LINE_INTERVAL_S = 30.0  #: plain-line mode: at most one line per this many seconds
BAR_INTERVAL_S = 0.5  #: bar mode: redraw at most this often


def style(stream: TextIO | None = None) -> str:
    """``bar``, ``lines`` or ``off``: ``$DABENCH_PROGRESS``, else by whether ``stream`` is a TTY."""
    chosen = os.environ.get("DABENCH_PROGRESS", "auto").strip().lower()
    if chosen in ("bar", "lines", "off"):
        return chosen
    stream = stream or sys.stderr
    try:
        return "bar" if stream.isatty() else "lines"
    except (AttributeError, ValueError):
        return "lines"


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def eta_seconds(elapsed_s: float, done: int, total: int) -> float | None:
    """Seconds left at the pace so far; None before the first is done."""
    if done <= 0 or total <= 0:
        return None
    return elapsed_s / done * max(0, total - done)


class _Line:
    """One progress line: a tqdm bar (TTY) or throttled plain lines; the base of both kinds of progress."""

    def __init__(self, total: int, desc: str, unit: str, stream: TextIO | None = None, mode: str | None = None):
        self.stream = stream or sys.stderr
        self.mode = mode or style(self.stream)
        self.total, self.desc, self.unit = total, desc, unit
        self.done = 0
        self.started = time.monotonic()
        self.last_shown = self.started
        self.bar = None
        if self.mode == "bar":
            import shutil

            from tqdm import tqdm

            width = shutil.get_terminal_size((0, 0)).columns  # 0 on a pseudo-terminal without a size
            self.bar = tqdm(
                total=total,
                desc=desc,
                unit=unit,
                file=self.stream,
                leave=False,
                dynamic_ncols=width > 0,
                ncols=None if width > 0 else 100,
                nrows=None if width > 0 else 24,
                mininterval=BAR_INTERVAL_S,
                smoothing=0,
                position=0,
                delay=BAR_INTERVAL_S,
            )

    def show(self, done: int, postfix: str, text: Callable[[], str], force: bool = False) -> None:
        """Draw ``done`` (bar) or print ``text()`` (plain line) when due."""
        if self.mode == "off":
            return
        if self.bar is not None:
            self.bar.n = done
        now = time.monotonic()
        if not force and now - self.last_shown < (LINE_INTERVAL_S if self.bar is None else BAR_INTERVAL_S):
            return
        self.last_shown = now
        if self.bar is not None:
            self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.refresh()
        else:
            print(text(), file=self.stream, flush=True)

    def set_total(self, total: int) -> None:
        self.total = int(total)
        if self.bar is not None:
            self.bar.total = total

    def clear(self) -> None:
        if self.bar is not None:
            self.bar.clear()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class SweepProgress(_Line):
    """done/total jobs, ok/failed, ETA: ``clear()`` before each job writes its own lines (a bar is
    redrawn when it ends), ``finished(ok)`` after it, ``close()`` at the end."""

    def __init__(
        self,
        total: int,
        desc: str = "dabench",
        unit: str = "runs",
        stream: TextIO | None = None,
        mode: str | None = None,
    ):
        super().__init__(int(total), desc, unit, stream, mode)
        self.ok = self.failed = 0

    def text(self) -> str:
        elapsed = time.monotonic() - self.started
        eta = eta_seconds(elapsed, self.done, self.total)
        left = "" if eta is None else f", ETA {duration(eta)}"
        return (
            f"{self.desc}: {self.done}/{self.total} {self.unit} done ({self.ok} ok, {self.failed} failed), "
            f"{duration(elapsed)} elapsed{left}"
        )

    def finished(self, ok: bool) -> None:
        self.done += 1
        if ok:
            self.ok += 1
        else:
            self.failed += 1
        self.show(
            self.done, f"{self.ok} ok, {self.failed} failed", self.text, force=self.done == 1 or self.done >= self.total
        )


def cheaper_command(argv: list[str] | None = None) -> str:
    """This command with ``hardware.mode=predict`` in place of any mode it set."""
    args = [a for a in (sys.argv[1:] if argv is None else argv) if not a.lstrip("+~").startswith("hardware.mode=")]
    return "python -m dabench " + " ".join([*map(shlex.quote, args), "hardware.mode=predict"])


#: one step putting a run at this many times its limit stops it before its estimate is due
EARLY_STOP = 2.0


class StepProgress(_Line):
    """The steps of one measured run: ``step()`` after each step, outside any timed interval."""

    def __init__(
        self,
        label: str,
        steps: int,
        reason: str = "",
        stream: TextIO | None = None,
        mode: str | None = None,
        estimate_after: int = 1,
        limit_s: float | None = None,
    ):
        super().__init__(max(1, int(steps)), label, "steps", stream, mode)
        self.reason = reason
        self.limit_s = limit_s
        self.phase = "warm-up"
        self.estimate_after = max(1, int(estimate_after))
        self.estimated_s: float | None = None

    def estimate(self) -> float | None:
        """Seconds the whole run takes at the pace so far."""
        if self.done <= 0:
            return None
        return (time.monotonic() - self.started) / self.done * self.total

    def set_phase(self, phase: str) -> None:
        self.phase = phase

    def add_steps(self, steps: int) -> None:
        """``steps`` more to take (a timed window measured again)."""
        self.set_total(self.total + int(steps))

    def step(self) -> None:
        self.done += 1
        early = self.done < self.estimate_after and self.limit_s is not None
        # announced when due, or before then as soon as a step puts the run far past its limit
        if (self.done == self.estimate_after and self.estimated_s is None) or (
            early and (self.estimate() or 0.0) > EARLY_STOP * self.limit_s
        ):
            self._announce()
        self.show(self.done, self.phase, self.text)

    def text(self) -> str:
        left = eta_seconds(time.monotonic() - self.started, self.done, self.total)
        return f"{self.desc}: {self.phase} step {self.done}/{self.total}" + (
            "" if left is None else f", about {duration(left)} left"
        )

    def _announce(self) -> None:
        self.estimated_s = self.estimate()
        if self.estimated_s is None:
            return
        why = f" ({self.reason})" if self.reason else ""
        if self.limit_s is not None and self.estimated_s > self.limit_s:
            raise RunTimeout(
                f"{self.desc}: stopped after {self.done} of {self.total} steps: it would take about "
                f"{duration(self.estimated_s)}{why}, more than run.max_minutes={self.limit_s / 60:g}; "
                f"cheaper: {cheaper_command()} (or fewer run.timed_steps, a smaller model, "
                "or a larger run.max_minutes)"
            )
        if self.estimated_s > LONG_RUN_S:
            message = (
                f"{self.desc}: this measured run will take about {duration(self.estimated_s)}{why}, "
                f"estimated from its first {self.done} step(s) of {self.total}; fewer run.timed_steps / "
                "run.warmup_steps, a smaller model or hardware.mode=predict are quicker"
            )
            self.clear()
            log.warning("%s", message)
