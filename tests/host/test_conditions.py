"""dabench/host/conditions.py: the readings, the window's arithmetic and the thresholds, on readings
taken on a 2-core VM (quiet, beside one and two busy loops); dabench/host/cache.py's fallback."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from dabench.host import cache, conditions
from dabench.host.conditions import Sample, judge, window


@pytest.fixture
def check_on(monkeypatch):
    monkeypatch.setenv(conditions.CHECK_ENV, "on")


def test_cgroup_cpu_max_lines():
    assert conditions.parse_cpu_max("200000 100000\n") == 2.0
    assert conditions.parse_cpu_max("150000 100000") == 1.5
    assert conditions.parse_cpu_max("max 100000") is None


def test_cgroup_quota_is_found_in_this_process_cgroup_or_a_parent(tmp_path):
    (tmp_path / "user.slice" / "job").mkdir(parents=True)
    (tmp_path / "user.slice" / "cpu.max").write_text("150000 100000\n")
    (tmp_path / "user.slice" / "job" / "cpu.max").write_text("max 100000\n")
    own = tmp_path / "self_cgroup"
    own.write_text("0::/user.slice/job\n")
    assert conditions.cgroup_quota(tmp_path, own) == 1.5
    own.write_text("0::/\n")
    assert conditions.cgroup_quota(tmp_path, own) is None


def test_allowed_cpus_is_affinity_capped_by_the_quota(monkeypatch):
    monkeypatch.setattr(conditions, "affinity", lambda: {0, 1, 2, 3})
    monkeypatch.setattr(conditions, "cgroup_quota", lambda: 2.5)
    assert conditions.allowed_cpus() == 2
    monkeypatch.setattr(conditions, "cgroup_quota", lambda: 0.5)
    assert conditions.allowed_cpus() == 1
    monkeypatch.setattr(conditions, "cgroup_quota", lambda: None)
    assert conditions.allowed_cpus() == 4


def test_proc_stat_counts_only_the_allowed_cpus():
    text = (
        "cpu  300 0 30 900 0 0 0 9 0 0\n"
        "cpu0 100 0 10 300 0 0 0 3 0 0\n"
        "cpu1 200 0 20 600 0 1 2 6 0 0\n"
        "intr 1 2 3\nprocs_running 3\nprocs_blocked 0\n"
    )
    assert conditions.parse_proc_stat(text, {1}) == (223.0, 6.0, 3, True)
    assert conditions.parse_proc_stat(text, {0, 1}) == (333.0, 9.0, 3, True)
    assert conditions.parse_proc_stat("", {0})[3] is False


def test_pressure_some_total_in_seconds():
    text = "some avg10=0.13 avg60=1.90 avg300=1.28 total=7138776\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    assert conditions.parse_pressure(text) == pytest.approx(7.138776)
    assert conditions.parse_pressure("") is None


def reading(wall, share, others, wait, threads=2, cpus=2, steps=(0.012, 0.012, 0.013, 0.012, 0.012)):
    """Two samples ``wall`` seconds apart in which this process got ``share`` of ``threads`` CPUs,
    others used ``others`` CPUs and some task waited ``wait`` of the time."""
    before = Sample(100.0, 10.0, 50.0, 1.0, 2, True, 5.0)
    own = share * wall * min(threads, cpus)
    after = Sample(100.0 + wall, 10.0 + own, 50.0 + own + others * wall, 1.0, 2, True, 5.0 + wait * wall)
    return window(before, after, threads, cpus, list(steps))


def test_window_arithmetic():
    c = reading(0.2, 0.5, 1.0, 0.5)
    assert c.cpu_share == pytest.approx(0.5) and c.others_cpus == pytest.approx(1.0)
    assert c.contention == pytest.approx(0.5) and c.wait == pytest.approx(0.5)
    metrics = c.metrics()
    assert metrics["measure.cpu_share"] == pytest.approx(0.5) and metrics["measure.cpus_allowed"] == 2
    assert {"measure.steal", "measure.run_queue", "measure.step_spread", "measure.threads"} <= set(metrics)
    # one thread on two CPUs: another process on the idle CPU takes nothing from it
    assert reading(0.2, 1.0, 1.0, 0.0, threads=1).contention == pytest.approx(0.0, abs=1e-9)


# windows as read on the 2-core VM (tiny default run; cpu_share, others' CPUs, PSI wait):
QUIET = [(0.069, 1.02, 0.00, 0.00), (0.058, 0.98, 0.00, 0.01), (0.061, 1.03, 0.09, 0.02)]
ONE_BUSY = [(0.457, 0.56, 0.75, 0.49), (0.264, 0.59, 0.63, 0.50)]
TWO_BUSY = [(0.152, 0.49, 1.06, 0.99), (0.666, 0.34, 1.32, 0.95)]


@pytest.mark.parametrize("wall,share,others,wait", QUIET)
def test_a_quiet_window_is_steady(check_on, wall, share, others, wait):
    assert judge(reading(wall, share, others, wait)) is None


@pytest.mark.parametrize("wall,share,others,wait", ONE_BUSY + TWO_BUSY)
def test_a_window_beside_busy_processes_is_unsteady_and_says_why(check_on, wall, share, others, wait):
    reason = judge(reading(wall, share, others, wait))
    assert reason is not None
    assert reason.startswith(f"got {share:.0%} of 2 CPUs during the timed steps")
    assert "other processes used the rest" in reason and "quiet" in reason


def test_a_serial_workload_alone_is_not_called_disturbed(check_on):
    """Low CPU share with nobody else waiting: the workload's own serial parts, not a disturbance."""
    assert judge(reading(0.5, 0.45, 0.0, 0.0)) is None


def test_without_psi_other_processes_cpu_time_decides(check_on):
    c = reading(0.3, 0.55, 0.8, 0.0)
    no_psi = window(
        Sample(0.0, 0.0, 0.0, 0.0, 2, True, None),
        Sample(c.wall_s, c.cpu_share * c.wall_s * 2, (c.cpu_share * 2 + 0.8) * c.wall_s, 0.0, 2, True, None),
        2,
        2,
        [0.01] * 5,
    )
    assert no_psi.wait is None and "measure.cpu_wait" not in no_psi.metrics()
    assert judge(no_psi) is not None


def test_steal_and_step_spread(check_on):
    before = Sample(0.0, 0.0, 0.0, 0.0, 2, True, 0.0)
    stolen = window(before, Sample(1.0, 2.0, 2.0, 0.4, 2, True, 0.0), 2, 2, [0.1] * 5)
    assert stolen.steal == pytest.approx(0.2) and "hypervisor" in judge(stolen)
    spread = reading(0.2, 1.0, 0.0, 0.0, steps=(0.010, 0.010, 0.011, 0.010, 0.030))
    assert spread.step_spread == pytest.approx(2.0) and "spread 200%" in judge(spread)


def test_a_window_too_short_for_cpu_time_is_judged_on_its_steps_only(check_on):
    assert judge(reading(0.01, 0.3, 1.5, 1.0)) is None
    assert judge(reading(0.03, 0.3, 1.5, 1.0)) is not None  # PSI and the process clock are precise


def test_the_check_can_be_turned_off_but_the_metrics_stay(monkeypatch):
    monkeypatch.setenv(conditions.CHECK_ENV, "off")
    c = reading(0.3, 0.3, 1.4, 0.99)
    assert judge(c) is None and c.metrics()["measure.cpu_share"] == pytest.approx(0.3)


def test_threads_default_to_the_allowed_cpus_and_a_larger_setting_is_said_once(monkeypatch, caplog):
    monkeypatch.setattr(conditions, "allowed_cpus", lambda: 2)
    monkeypatch.setattr(conditions, "_WARNED_THREADS", set())
    assert conditions.run_threads(None) == 2
    with caplog.at_level(logging.WARNING, logger="dabench"):
        assert conditions.run_threads(8) == 8
        assert conditions.run_threads(8) == 8
        assert conditions.run_threads(1) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "run.threads=8 is more than the 2 CPU(s)" in warnings[0]


def test_sampling_reads_this_machine():
    s = conditions.sample()
    assert s.wall_s > 0 and s.cpu_s > 0
    assert 1 <= conditions.allowed_cpus() <= (os.cpu_count() or 1)


def test_unwritable_names_why(tmp_path):
    assert cache.unwritable(tmp_path / "new" / "deeper") == ""  # created under a writable ancestor
    (tmp_path / "a_file").write_text("")
    assert cache.unwritable(tmp_path / "a_file" / "cache") == f"{tmp_path / 'a_file'} is a file, not a folder"
    assert cache.unwritable(tmp_path / "a_file") == f"{tmp_path / 'a_file'} is a file, not a folder"


def _store_entries(path: str, first: int) -> None:
    from dabench.host.cache import CalibrationCache

    for i in range(first, first + 10):
        CalibrationCache(Path(path)).update(f"k{i}", {"value": 1.0 + i, "samples": [1.0 + i]})


def test_writers_that_meet_keep_each_others_entries(tmp_path):
    """Four processes updating one cache at once: a readable file holding all 40 entries."""
    import multiprocessing

    path = tmp_path / "cache" / "calibration.json"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_store_entries, args=(str(path), 10 * n)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    entries, problems = cache.CalibrationCache(path).read()
    assert problems == [] and sorted(entries) == sorted(f"k{i}" for i in range(40))


def test_an_unwritable_cache_folder_falls_back_to_a_temporary_cache_said_once(tmp_path, monkeypatch, caplog):
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    monkeypatch.setattr(cache, "_CHOSEN", {})
    monkeypatch.setattr(cache, "temporary_cache", lambda: tmp_path / "tmp" / "calibration.json")
    with caplog.at_level(logging.WARNING, logger="dabench"):
        first, second = cache.calibration_cache(), cache.calibration_cache()
    assert first == second == tmp_path / "tmp" / "calibration.json"
    warnings = [r.getMessage() for r in caplog.records if "calibration cache" in r.getMessage()]
    assert len(warnings) == 1 and "cannot be written" in warnings[0] and str(first) in warnings[0]
    assert "is a file, not a folder" in warnings[0] and "point DABENCH_CACHE_DIR at a folder" in warnings[0]
    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path / "writable"))
    assert cache.calibration_cache() == tmp_path / "writable" / "calibration.json"


def test_a_missing_home_falls_back_too(monkeypatch, tmp_path):
    monkeypatch.delenv("DABENCH_CACHE_DIR", raising=False)
    monkeypatch.setattr(cache, "_CHOSEN", {})
    monkeypatch.setattr(cache, "temporary_cache", lambda: tmp_path / "calibration.json")
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: (_ for _ in ()).throw(RuntimeError("no home"))))
    assert cache.calibration_cache() == tmp_path / "calibration.json"


def test_a_calibration_measured_while_disturbed_is_refused_and_not_cached(monkeypatch, tmp_path):
    """The run then records no efficiency rather than a wrong one (dabench/host/ceilings.py)."""
    from dabench.host import calibrate
    from tests.conftest import fresh_calibration

    fresh_calibration(monkeypatch, tmp_path)
    monkeypatch.setattr(conditions, "judge", lambda c: "got 40% of 2 CPUs: other processes used the rest")
    with pytest.raises(calibrate.CalibrationRefused) as refused:
        calibrate.calibrate("copy", lambda: [1.0e10] * (calibrate.MIN_REPEATS + 2), load=0.0)
    assert "disturbed while measured: got 40% of 2 CPUs" in refused.value.reason
    assert not (tmp_path / "calibration.json").exists()
    monkeypatch.setattr(conditions, "judge", lambda c: None)  # steady: accepted and cached
    assert calibrate.calibrate("copy", lambda: [1.0e10] * (calibrate.MIN_REPEATS + 2), load=0.0).value == 1.0e10
    assert (tmp_path / "calibration.json").exists()
