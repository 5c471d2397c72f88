"""A noisy machine that is not loaded keeps its ceilings, efficiencies, roofline point and
diagnosis, with a wider band and a tag saying how noisy it was; a loaded one (1-minute load above
1.0 per core) is refused calibration and says why. Calibration repeats and load are injected."""

import pytest

from dabench.config.build import build_run_config
from dabench.host import calibrate
from dabench.pipeline.execute import execute
from tests.conftest import composed, fresh_calibration

PEAK = [1.0e12, 0.8e12, 1.05e12, 1.0e12, 0.9e12, 1.0e12, 0.95e12]  # spread 25%: noisy
COPY = [1.0e11, 0.98e11, 1.01e11, 1.0e11, 0.99e11, 1.0e11, 1.0e11]
FAST = ["model.n_layers=1", "run.warmup_steps=1", "run.timed_steps=2", "run.profile_subtasks=false"]


@pytest.fixture
def noisy_machine(tmp_path, monkeypatch):
    """A fresh calibration cache, injected noisy matmul repeats and steady copy repeats."""
    fresh_calibration(monkeypatch, tmp_path)
    monkeypatch.setattr(calibrate, "matmul_samples", lambda dtype, repeats=7: PEAK[:repeats])
    monkeypatch.setattr(calibrate, "copy_samples", lambda repeats=7: COPY[:repeats])
    return monkeypatch


@pytest.mark.parametrize("mode", ["measure", "validate"])
def test_a_noisy_machine_widens_the_band_and_keeps_the_metrics(noisy_machine, mode):
    noisy_machine.setattr(calibrate, "load_per_core", lambda: 0.6)
    result = execute(build_run_config(composed([f"hardware.mode={mode}", *FAST])))
    assert result.status.value == "ok", result.reason
    m = result.metrics
    assert result.ceilings.peak_flops == 1.05e12  # the fastest repeat is the roof
    assert m["ceilings.noisy"] == 1.0 and m["ceilings.band_width"] == pytest.approx(0.05)
    assert m["ceilings.peak_flops.lo"] == 1.0e12 and m["ceilings.peak_flops.hi"] == pytest.approx(1.1025e12)
    eff = m["tier1.compute_efficiency"]
    assert m["tier1.compute_efficiency.lo"] == pytest.approx(eff / 1.05)
    assert m["tier1.compute_efficiency.hi"] == pytest.approx(eff * 1.05)
    assert "roofline.step.roof_share" in m and result.diagnosis[0] != "undiagnosed"
    assert result.notes["dabench.ceilings_noise"].startswith("noisy: repeats spread 25% (> 10%), load 0.60/core")
    if mode == "validate":
        assert "predict.rel_error.samples_per_s" in m and "validate.probed_peak_flops" in m


def test_a_loaded_machine_is_refused_calibration_with_the_reason(noisy_machine):
    noisy_machine.setattr(calibrate, "load_per_core", lambda: 1.5)
    result = execute(build_run_config(composed(FAST)))
    assert result.status.value == "ok", result.reason
    assert "tier1.compute_efficiency" not in result.metrics and result.diagnosis[0] == "undiagnosed"
    assert "load average 1.50 per core > 1.0" in result.notes["dabench.ceilings_note"]


def test_a_measurement_far_beyond_the_band_still_fails(noisy_machine):
    """Injected repeats 1000x below what this CPU does: the measured efficiency is far above the
    band's top (1.05 here), a violation the noise cannot explain."""
    noisy_machine.setattr(calibrate, "load_per_core", lambda: 0.6)
    noisy_machine.setattr(calibrate, "matmul_samples", lambda dtype, repeats=7: [x / 1e4 for x in PEAK[:repeats]])
    result = execute(build_run_config(composed(FAST)))
    assert result.status.value == "invalid_result", result.reason
    assert "tier1.compute_efficiency" in result.reason


def test_a_bound_broken_against_a_slow_calibration_is_probed_again(noisy_machine):
    """Calibrated in a slow phase (injected 1000x low), measured in a fast one: the run probes the
    machine once more after its steps, and the probe's rate (injected) becomes the roof."""
    noisy_machine.setattr(calibrate, "load_per_core", lambda: 0.6)
    slow_then_fast = lambda dtype, repeats=7: [x / 1e4 for x in PEAK[:repeats]] if repeats >= 5 else [1e13] * repeats  # noqa: E731
    noisy_machine.setattr(calibrate, "matmul_samples", slow_then_fast)
    result = execute(build_run_config(composed(FAST)))
    assert result.status.value == "ok", result.reason
    assert result.ceilings.peak_flops == 1e13 and "in-situ probes" in result.ceilings.source
    assert "tier1.compute_efficiency" in result.notes["dabench.probed_again"]
