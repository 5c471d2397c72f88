"""dabench/backends/measure.py: a disturbed timed window is timed again (``run.remeasure``), the
last window's times are kept, and the steps' own band and conditions become metrics."""

from __future__ import annotations

import pytest

from dabench.backends import measure


class Clock:
    def __init__(self):
        self.t = 0.0

    def mark(self):
        return self.t

    def elapsed(self, a, b):
        return b - a

    def synchronize(self):
        pass


class State:
    """Each step advances the clock by the next of ``durations``."""

    def __init__(self, clock, durations):
        self.clock, self.durations = clock, iter(durations)

    def step(self):
        self.clock.t += next(self.durations)


class Watch:
    """Says the first ``unsteady`` windows are disturbed."""

    def __init__(self, unsteady):
        self.unsteady, self.attempts = unsteady, []

    def start(self):
        pass

    def stop(self, times):
        reason = "disturbed" if len(self.attempts) < self.unsteady else None
        self.attempts.append((list(times), reason))
        return reason


class Progress:
    def __init__(self):
        self.added = 0

    def set_phase(self, phase):
        pass

    def step(self):
        pass

    def add_steps(self, n):
        self.added += n


@pytest.mark.parametrize("unsteady,remeasure,windows", [(0, 2, 1), (1, 2, 2), (5, 2, 3), (5, 0, 1)])
def test_a_disturbed_window_is_timed_again_up_to_remeasure_times(unsteady, remeasure, windows):
    clock = Clock()
    durations = [1.0] + [float(w + 2) for w in range(windows) for _ in range(3)]  # warm-up, then one value per window
    calls, progress, watch = [], Progress(), Watch(unsteady)
    times = measure.time_steps(State(clock, durations), clock, 1, 3, progress, None, calls.append, watch, remeasure)
    assert len(watch.attempts) == windows and calls == ["before", "after"] * windows
    assert times == [float(windows + 1)] * 3  # the last window's steps
    assert progress.added == 3 * (windows - 1)


def test_window_metrics_band_and_conditions():
    out = measure.window_metrics([0.010, 0.012, 0.011, 0.020], 4, None)
    assert out["step_time.median_s.lo"] == 0.010 and out["step_time.median_s.hi"] == 0.020
    assert out["throughput.samples_per_s.lo"] == pytest.approx(200.0)
    assert out["throughput.samples_per_s.hi"] == pytest.approx(400.0)
    assert out["measure.step_spread"] == pytest.approx(0.010 / 0.0115)
    assert "measure.attempts" not in out  # no watch (a CUDA run): no CPU conditions
