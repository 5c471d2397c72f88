"""dabench/runtime/progress.py: sweep and step progress lines, the long-run warning, and that a measured
run's progress is told of steps between clock marks, never inside them."""

import io
import logging
import time

import pytest

from dabench.backends import measure
from dabench.runtime import progress as P


def test_duration_and_eta_are_plain_arithmetic():
    assert P.duration(42) == "42 s"
    assert P.duration(185) == "3 min 05 s"
    assert P.duration(3720) == "1 h 02 min"
    assert P.eta_seconds(10.0, 2, 6) == 20.0  # 5 s per job, 4 left
    assert P.eta_seconds(10.0, 0, 6) is None


def test_style_follows_the_environment_and_the_stream(monkeypatch):
    monkeypatch.delenv("DABENCH_PROGRESS", raising=False)
    assert P.style(io.StringIO()) == "lines"  # not a TTY: plain lines for CI logs
    monkeypatch.setenv("DABENCH_PROGRESS", "off")
    assert P.style(io.StringIO()) == "off"


def test_sweep_progress_prints_first_and_last_lines_with_counts_and_eta():
    out = io.StringIO()
    sweep = P.SweepProgress(4, "multirun", "runs", stream=out, mode="lines")
    for ok in (True, False, True, True):
        sweep.finished(ok)
    sweep.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the first job (an early ETA) and the last; the rest throttled
    assert lines[0].startswith("multirun: 1/4 runs done (1 ok, 0 failed)") and "ETA" in lines[0]
    assert lines[1].startswith("multirun: 4/4 runs done (3 ok, 1 failed)")


def test_sweep_progress_bar_on_a_terminal_shows_done_total_and_counts():
    out = io.StringIO()
    sweep = P.SweepProgress(3, "study", "trials", stream=out, mode="bar")
    sweep.finished(True)  # the first job is drawn at once; later ones at most every BAR_INTERVAL_S
    text = out.getvalue()
    assert "1/3" in text and "1 ok, 0 failed" in text and "study" in text
    sweep.finished(False)
    sweep.finished(True)  # the last one is drawn too
    assert "3/3" in out.getvalue() and "2 ok, 1 failed" in out.getvalue()
    sweep.close()


def test_a_long_measured_run_is_announced_once_with_its_reason(caplog):
    steps = P.StepProgress(
        "measure gpt2_small", steps=10, reason="bf16 is emulated on this CPU", stream=io.StringIO(), mode="lines"
    )
    steps.started = time.monotonic() - 100  # the first step took 100 s: 10 steps ~ 1000 s
    with caplog.at_level(logging.WARNING, logger="dabench"):
        steps.step()
        steps.step()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "bf16 is emulated on this CPU" in warnings[0] and "min" in warnings[0]


def test_a_short_run_is_not_announced(caplog):
    steps = P.StepProgress("measure tiny", steps=10, stream=io.StringIO(), mode="lines")
    with caplog.at_level(logging.WARNING, logger="dabench"):
        for _ in range(10):
            steps.step()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert steps.estimated_s is not None and steps.estimated_s < P.LONG_RUN_S


def test_time_steps_tells_progress_between_clock_marks_never_inside_them():
    log = []

    class Clock:
        def mark(self):
            log.append("mark")
            return len(log)

        def elapsed(self, a, b):
            return float(b - a)

        def synchronize(self):
            pass

    class State:
        def step(self):
            log.append("train")
            return None

    class Progress:
        def set_phase(self, phase):
            log.append(f"phase:{phase}")

        def step(self):
            log.append("progress")

    times = measure.time_steps(State(), Clock(), warmup=2, timed=3, progress=Progress())
    assert len(times) == 3
    timed = log[log.index("phase:timed") + 1 :]
    assert timed == ["mark", "train", "mark", "progress"] * 3  # each timed interval holds only the step
    assert log[: log.index("phase:timed")].count("progress") == 2  # warm-up steps counted too


def test_a_run_estimated_above_its_limit_stops_after_warm_up_with_one_line(monkeypatch):
    from dabench.core.status import RunTimeout

    monkeypatch.setattr("sys.argv", ["dabench", "model=gpt2_small", "hardware.mode=measure", "precision=bf16"])
    steps = P.StepProgress(
        "measure gpt2_small", steps=11, reason="bf16 is emulated on this CPU", mode="off", estimate_after=2, limit_s=60
    )
    steps.started = P.time.monotonic() - 10.0  # the first warm-up step took 10 s: 110 s < 2 x the limit
    steps.step()  # no estimate yet
    steps.started = P.time.monotonic() - 200.0  # the second took 190 s
    with pytest.raises(RunTimeout) as stopped:
        steps.step()
    line = stopped.value.reason
    assert "\n" not in line and "stopped after 2 of 11 steps" in line and "about 18 min" in line
    assert "(bf16 is emulated on this CPU)" in line and "run.max_minutes=1" in line
    assert "cheaper: python -m dabench model=gpt2_small precision=bf16 hardware.mode=predict" in line


def test_one_step_far_beyond_the_limit_stops_without_the_second(monkeypatch):
    from dabench.core.status import RunTimeout

    monkeypatch.setattr("sys.argv", ["dabench", "model=gpt2_small", "precision=bf16"])
    steps = P.StepProgress("measure gpt2_small", steps=16, mode="off", estimate_after=2, limit_s=1800)
    steps.started = P.time.monotonic() - 540.0  # one emulated-bf16 step: 9 min, so 16 steps ~ 2.4 h
    with pytest.raises(RunTimeout) as stopped:
        steps.step()
    assert "stopped after 1 of 16 steps" in stopped.value.reason


def test_a_run_within_its_limit_goes_on():
    steps = P.StepProgress("measure tiny", steps=10, mode="off", estimate_after=2, limit_s=3600)
    for _ in range(10):
        steps.step()
    assert steps.estimated_s is not None and steps.estimated_s < 3600
