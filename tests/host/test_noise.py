"""A noisy machine's ceilings as bands: the roof is the fastest repeat, the band widens with the
repeats' spread, and efficiencies carry the same relative band (pure functions)."""

import pytest

from dabench.host.noise import (
    CeilingBand,
    band_metrics,
    ceiling_band,
    held_to_band_top,
    noise_note,
)


def test_the_roof_is_the_fastest_repeat_and_the_band_is_symmetric_around_it_in_ratio():
    band = ceiling_band([80.0, 100.0, 120.0, 100.0, 90.0])
    assert (band.roof, band.median) == (120.0, 100.0)
    assert band.width == pytest.approx(0.2)
    assert (band.lo, band.hi) == (pytest.approx(100.0), pytest.approx(144.0))  # median, R^2 / median
    assert band.spread == pytest.approx(0.4) and band.noisy


def test_a_steady_machine_has_a_narrow_band_and_a_noisier_one_a_wider_band():
    steady = ceiling_band([100.0, 101.0, 99.0, 100.5, 99.5])
    noisy = ceiling_band([100.0, 80.0, 125.0, 100.0, 95.0])
    assert not steady.noisy and steady.width == pytest.approx(0.01)
    assert noisy.noisy and noisy.width == pytest.approx(0.25)
    assert noisy.hi / noisy.lo > steady.hi / steady.lo


def test_one_repeat_or_identical_repeats_give_no_width():
    assert ceiling_band([5e10]).width == 0.0
    band = ceiling_band([1e13] * 5)
    assert (band.lo, band.roof, band.hi) == (1e13, 1e13, 1e13)


@pytest.mark.parametrize("samples", [[], [1.0, 0.0], [-1.0]])
def test_a_band_needs_positive_repeats(samples):
    with pytest.raises(ValueError):
        ceiling_band(samples)


def test_an_efficiencys_band_stops_at_one():
    # a loaded machine: the probe's median 80x below its fastest repeat
    loaded = CeilingBand(roof=81.0, median=1.0, spread=80.0)
    out = band_metrics({"tier1.compute_efficiency": 0.05}, loaded, None, "dram")
    assert out["tier1.compute_efficiency.lo"] == pytest.approx(0.05 / 81) and out["tier1.compute_efficiency.hi"] == 1.0
    above = band_metrics({"tier1.compute_efficiency": 1.2}, CeilingBand(1.5, 1.0, 0.5), None, "dram")
    assert above["tier1.compute_efficiency.hi"] == 1.2  # above 1 inside its band: kept, never cut


def test_band_metrics_name_both_ceilings_and_both_efficiencies():
    peak = CeilingBand(roof=120.0, median=100.0, spread=0.4)
    bandwidth = CeilingBand(roof=10.0, median=10.0, spread=0.02)
    metrics = {"tier1.compute_efficiency": 0.6, "tier1.bandwidth_efficiency.dram": 0.1}
    out = band_metrics(metrics, peak, bandwidth, "dram")
    assert out["ceilings.peak_flops"] == 120.0 and out["ceilings.peak_flops.hi"] == pytest.approx(144.0)
    assert out["ceilings.bandwidth_Bps.lo"] == out["ceilings.bandwidth_Bps.hi"] == 10.0
    assert out["tier1.compute_efficiency.lo"] == pytest.approx(0.5)
    assert out["tier1.compute_efficiency.hi"] == pytest.approx(0.72)
    assert out["tier1.bandwidth_efficiency.dram.lo"] == out["tier1.bandwidth_efficiency.dram.hi"] == 0.1
    assert (out["ceilings.spread"], out["ceilings.band_width"], out["ceilings.noisy"]) == (0.4, pytest.approx(0.2), 1.0)


def test_a_ceiling_from_the_spec_has_no_band():
    assert band_metrics({"tier1.compute_efficiency": 0.5}, None, None, "dram") == {}
    only_bw = band_metrics({"tier1.compute_efficiency": 0.5}, None, CeilingBand(10.0, 10.0, 0.0), "dram")
    assert "tier1.compute_efficiency.lo" not in only_bw and only_bw["ceilings.noisy"] == 0.0


def test_the_note_says_noisy_or_steady_and_by_how_much():
    noisy = noise_note(CeilingBand(120.0, 100.0, 0.4), None, 0.7)
    assert noisy.startswith("noisy: repeats spread 40% (> 10%), load 0.70/core") and "+-20.0%" in noisy
    assert noise_note(CeilingBand(101.0, 100.0, 0.02), None, None).startswith("steady: repeats spread 2.0%")
    assert noise_note(None, None, 0.1) == ""


def test_a_measured_efficiency_is_judged_against_the_top_of_its_band():
    from dabench.metrics.checks import check_result

    peak = CeilingBand(roof=100.0, median=80.0, spread=0.3)  # w = 0.25: band top 125
    faster_phase = {"tier1.compute_efficiency": 1.1, "roofline.step.roof_share": 1.1, "perf.achieved_tflops": 1.0}
    held = held_to_band_top(faster_phase, peak, None, "dram")
    assert held["tier1.compute_efficiency"] == pytest.approx(0.88) and held["perf.achieved_tflops"] == 1.0
    assert check_result(held) is None and check_result(faster_phase) is not None
    beyond = held_to_band_top({"tier1.compute_efficiency": 1.3}, peak, None, "dram")
    assert check_result(beyond).status.value == "invalid_result"
    steady = CeilingBand(roof=100.0, median=100.0, spread=0.0)
    assert held_to_band_top(faster_phase, steady, None, "dram") == faster_phase
