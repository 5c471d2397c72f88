"""CPU calibration: median of >= 5 repeats, refused only when the load is above the limit, noisy
(accepted, kept with its repeats) when they spread (load and repeats injected here, never produced
by loading the machine), keyed by CPU, threads, torch and precision, never a best-ever value;
native precision detection; uncalibrated ceilings."""

import json
import math

import pytest

from dabench.config.build import build_run_config
from dabench.host import calibrate
from dabench.host.ceilings import is_calibrated, resolve_ceilings
from dabench.host.info import cpu_native_precision
from tests.conftest import composed, fresh_calibration

QUIET = 0.1
STEADY = [100.0, 101.0, 99.0, 100.5, 99.5]
NOISY = [100.0, 80.0, 105.0, 100.0, 100.0]  # spread 25%


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    fresh_calibration(monkeypatch, tmp_path)
    return tmp_path


def test_accepted_calibration_is_the_median_of_the_repeats():
    cal = calibrate.accept("k", [100.0, 104.0, 96.0, 101.0, 98.0], QUIET)
    assert cal.value == 100.0
    assert len(cal.samples) == 5 and cal.spread == pytest.approx(8 / 100)


def test_refused_when_load_is_above_one_per_core():
    assert calibrate.accept("k", STEADY, 0.99).value == 100.0
    with pytest.raises(calibrate.CalibrationRefused, match="load average 1.20 per core > 1.0"):
        calibrate.accept("k", STEADY, 1.2)


def test_the_load_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(calibrate.LOAD_ENV, raising=False)
    assert calibrate.max_load_per_core() == 1.0
    monkeypatch.setenv(calibrate.LOAD_ENV, "2.5")
    assert calibrate.max_load_per_core() == 2.5
    for bad in ("0", "-1", "x", "100"):
        monkeypatch.setenv(calibrate.LOAD_ENV, bad)
        with pytest.raises(ValueError, match=calibrate.LOAD_ENV):
            calibrate.max_load_per_core()


def test_spread_repeats_are_accepted_as_noisy_not_refused():
    cal = calibrate.accept("k", NOISY, QUIET)
    assert cal.noisy and cal.spread == pytest.approx(0.25)
    assert (cal.value, cal.fastest) == (100.0, 105.0)
    assert not calibrate.accept("k", STEADY, QUIET).noisy


def test_a_noisy_cached_calibration_is_measured_again_once_and_the_steadier_kept(cache_dir, monkeypatch):
    assert calibrate.calibrate("demo", lambda: NOISY, load=QUIET).noisy
    monkeypatch.setattr(calibrate, "_PROCESS", {})  # a new process: measures again, keeps the steadier
    assert calibrate.calibrate("demo", lambda: STEADY, load=QUIET).spread == pytest.approx(0.02)
    monkeypatch.setattr(calibrate, "_PROCESS", {})  # steady in the cache now: not measured again
    assert calibrate.calibrate("demo", lambda: pytest.fail("measured"), load=QUIET).value == 100.0


def test_a_noisy_cached_calibration_stays_when_the_new_one_is_noisier_or_refused(cache_dir, monkeypatch):
    calibrate.calibrate("demo", lambda: NOISY, load=QUIET)
    monkeypatch.setattr(calibrate, "_PROCESS", {})
    assert calibrate.calibrate("demo", lambda: [100.0, 50.0, 120.0, 90.0, 100.0], load=QUIET).samples == tuple(NOISY)
    monkeypatch.setattr(calibrate, "_PROCESS", {})  # busy now: the cached noisy one, not a refusal
    assert calibrate.calibrate("demo", lambda: pytest.fail("measured"), load=3.0).samples == tuple(NOISY)


def test_a_recalibration_replaces_a_steady_entry_only_by_a_steady_one(cache_dir, monkeypatch):
    calibrate.calibrate("demo", lambda: STEADY, load=QUIET)
    assert calibrate.calibrate("demo", lambda: [v * 2 for v in NOISY], recalibrate=True, load=QUIET).value == 100.0
    assert calibrate.calibrate("demo", lambda: [90.0] * 5, recalibrate=True, load=QUIET).value == 90.0


def test_refused_with_fewer_than_five_repeats():
    with pytest.raises(calibrate.CalibrationRefused, match="at least 5"):
        calibrate.accept("k", STEADY[:4], QUIET)


def test_a_cached_calibration_is_reused_not_maximised(cache_dir, monkeypatch):
    assert calibrate.calibrate("demo", lambda: STEADY, load=QUIET).value == 100.0
    monkeypatch.setattr(calibrate, "_PROCESS", {})  # a new process: reads the cache, measures nothing
    assert calibrate.calibrate("demo", lambda: pytest.fail("measured again"), load=QUIET).value == 100.0
    monkeypatch.setattr(calibrate, "_PROCESS", {})  # --recalibrate on a quiet machine, lower median
    assert calibrate.calibrate("demo", lambda: [80.0] * 5, recalibrate=True, load=QUIET).value == 80.0
    (entry,) = json.loads((cache_dir / "calibration.json").read_text()).values()
    assert entry["value"] == 80.0 and entry["samples"] == [80.0] * 5  # replaced, not the best ever


def test_recalibrate_refused_keeps_the_cached_entry(cache_dir, monkeypatch):
    calibrate.calibrate("demo", lambda: STEADY, load=QUIET)
    with pytest.raises(calibrate.CalibrationRefused):
        calibrate.calibrate("demo", lambda: STEADY, recalibrate=True, load=1.5)
    monkeypatch.setattr(calibrate, "_PROCESS", {})
    assert calibrate.calibrate("demo", lambda: pytest.fail("measured"), load=1.5).value == 100.0


def test_recalibrate_from_the_environment(cache_dir, monkeypatch):
    calibrate.calibrate("demo", lambda: STEADY, load=QUIET)
    monkeypatch.setattr(calibrate, "_PROCESS", {})  # a new process, started with DABENCH_RECALIBRATE=1
    monkeypatch.setenv("DABENCH_RECALIBRATE", "1")
    assert calibrate.calibrate("demo", lambda: [50.0] * 5, load=QUIET).value == 50.0
    # once per process: the run's later calls reuse it
    assert calibrate.calibrate("demo", lambda: pytest.fail("measured twice"), load=QUIET).value == 50.0


def test_busy_machine_is_refused_before_measuring(cache_dir):
    with pytest.raises(calibrate.CalibrationRefused, match="busy"):
        calibrate.calibrate("demo", lambda: pytest.fail("measured on a busy machine"), load=2.0)
    assert not (cache_dir / "calibration.json").exists()


def test_key_names_cpu_threads_torch_and_precision():
    import torch

    key = calibrate.calibration_key("gemm_bf16", threads=3)
    assert key.endswith(f"|threads=3|torch={torch.__version__}|gemm_bf16")
    assert calibrate.calibration_key("gemm_bf16", threads=3) != calibrate.calibration_key("gemm_fp32", threads=3)
    assert calibrate.calibration_key("copy", threads=1) != calibrate.calibration_key("copy", threads=2)


def test_a_changed_key_recalibrates_and_old_best_ever_entries_are_ignored(cache_dir, monkeypatch):
    key = calibrate.calibration_key("demo")
    (cache_dir / "calibration.json").write_text(json.dumps({key: 1e15}))  # the old best-ever format
    assert calibrate.calibrate("demo", lambda: STEADY, load=QUIET).value == 100.0
    monkeypatch.setattr(calibrate, "_PROCESS", {})
    monkeypatch.setattr(calibrate.torch, "__version__", "9.9.9")  # another torch: another key
    assert calibrate.calibrate("demo", lambda: [70.0] * 5, load=QUIET).value == 70.0


def test_uncalibrated_ceilings_when_refused_and_nothing_cached(cache_dir, monkeypatch):
    monkeypatch.setattr(calibrate, "load_per_core", lambda: 3.0)
    rc = build_run_config(composed(["hardware=cpu"]))
    ceilings = resolve_ceilings(rc.hardware, rc.precision)
    assert not is_calibrated(ceilings)
    assert math.isnan(ceilings.peak_flops) and "load average 3.00 per core" in ceilings.source


@pytest.mark.parametrize(
    "flags, native",
    [({"avx2", "fma"}, False), ({"avx512f", "avx512_bf16"}, True), ({"amx_bf16"}, True), ({"asimd", "bf16"}, True)],
)
def test_native_bf16_detected_from_cpu_flags(flags, native):
    assert cpu_native_precision("bf16", frozenset(flags)) is native
    assert cpu_native_precision("fp32", frozenset(flags)) is True


def test_real_calibration_when_the_machine_is_quiet(cache_dir):
    """Measures for real; skipped (with the reason) when the machine is too busy to calibrate."""
    try:
        flops = calibrate.peak_flops("fp32")
        bandwidth = calibrate.dram_bandwidth()
    except calibrate.CalibrationRefused as refused:
        pytest.skip(str(refused))
    assert 1e9 < flops < 1e14  # between 1 GFLOP/s and 100 TFLOP/s for a CPU
    assert 1e8 < bandwidth < 1e13


def test_the_peak_is_timed_on_the_faster_gemm_path(monkeypatch):
    """torch.mm and F.linear can differ by 20x (bf16 without native arithmetic); the peak is the
    faster one's. With torch.mm made 1 s slower per call, the samples are F.linear's (well above
    2 * 2048^3 FLOP / 1 s)."""
    import time as clock

    import torch

    real_mm = torch.mm
    monkeypatch.setattr(torch, "mm", lambda a, b: (clock.sleep(1.0), real_mm(a, b))[1])
    rates = calibrate.matmul_samples("fp32", repeats=2)
    assert min(rates) > 2.0 * 2048**3 / 1.0
