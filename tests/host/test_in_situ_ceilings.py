"""Validate mode on the CPU predicts at ceilings probed around the measured run (the machine's
speed drifts), and takes every efficiency against the fastest rate shown by the calibration's and
the probes' repeats, with their band; a measured point fails only above the band."""

import math

import pytest

from dabench.core.ceilings import Ceilings
from dabench.host.calibrate import Calibration, Probe
from dabench.host.ceilings import IN_SITU, can_probe, in_situ_ceilings, roof_of
from tests.conftest import composed

CALIBRATED = Ceilings(peak_flops=100e9, bandwidth_Bps=20e9, memory_level="dram", source="calibrated")


def test_combined_probes_are_the_mean_and_the_drift_is_after_minus_before_over_the_mean():
    mean, metrics = in_situ_ceilings(CALIBRATED, Probe(80e9, 10e9), Probe(120e9, 30e9))
    assert (mean.peak_flops, mean.bandwidth_Bps) == (100e9, 20e9)
    assert metrics["validate.ceilings_drift"] == pytest.approx(0.4)


def test_the_model_gets_the_probes():
    model, metrics = in_situ_ceilings(CALIBRATED, Probe(60e9, 30e9), Probe(60e9, 30e9))
    assert (model.peak_flops, model.bandwidth_Bps, model.source) == (60e9, 30e9, IN_SITU)
    assert metrics["validate.peak_vs_calibrated"] == pytest.approx(-0.4)
    assert metrics["validate.ceilings_drift"] == 0.0


def _cal(kind, samples):
    import statistics

    return Calibration(kind, statistics.median(samples), tuple(samples), 0.0, 0.1, "test")


GEMM = _cal("gemm_fp32", [90e9, 100e9, 100e9, 105e9, 95e9])
COPY = _cal("copy", [20e9] * 5)


def test_the_roof_is_the_fastest_repeat_of_calibration_and_probes():
    probes = [Probe(110e9, 25e9, (100e9, 110e9, 112e9), (24e9, 25e9, 26e9)), Probe(90e9, 20e9, (90e9,), (20e9,))]
    measured = roof_of(CALIBRATED, (GEMM, COPY), probes)
    assert (measured.roof.peak_flops, measured.roof.bandwidth_Bps) == (112e9, 26e9)
    assert measured.peak.median == 100e9 and measured.check_roof.peak_flops == pytest.approx(112e9 * 1.12)
    alone = roof_of(CALIBRATED, (GEMM, COPY))
    assert (alone.roof.peak_flops, alone.roof.bandwidth_Bps) == (105e9, 20e9)
    assert alone.bandwidth.width == 0.0 and "fastest of the calibration repeats" in alone.roof.source


def test_ceilings_set_in_the_spec_get_no_band():
    spec = Ceilings(peak_flops=1e12, bandwidth_Bps=20e9, memory_level="dram", source="calibrated")
    measured = roof_of(spec, (GEMM, COPY))
    assert measured.peak is None and measured.roof.peak_flops == 1e12  # the spec's peak, untouched
    assert measured.bandwidth is not None
    nothing = roof_of(CALIBRATED, (None, None))
    assert nothing.roof is CALIBRATED and nothing.check_roof == CALIBRATED


def test_a_measured_class_between_the_median_and_the_band_top_passes_and_above_it_fails():
    from dabench.core.status import Status
    from dabench.metrics.checks import check_result
    from dabench.metrics.roofline import RooflinePoint
    from dabench.pipeline.execute import measured_points_bound

    measured = roof_of(CALIBRATED, (GEMM, COPY))  # median 100, roof 105, band top 110.25 GFLOP/s
    limit = measured.check_roof.peak_flops
    fast_phase = RooflinePoint("matmul", 200.0, 108e9, 105e9, 1.0, 1.0, 100.0)
    assert check_result({}, measured_points_bound([fast_phase], measured.roof, {}, limit)) is None
    impossible = RooflinePoint("matmul", 200.0, 150e9, 105e9, 1.0, 1.0, 100.0)
    failure = check_result({}, measured_points_bound([impossible], measured.roof, {}, limit))
    assert failure.status is Status.INVALID_RESULT and "matmul" in failure.reason


def test_only_single_process_cpu_validate_runs_with_calibrated_ceilings_probe():
    from dabench.config.build import build_run_config

    cpu = build_run_config(composed(["hardware.mode=validate"])).hardware
    assert can_probe(cpu, "none") and not can_probe(cpu, "dp")
    pinned = build_run_config(composed(["hardware.mode=validate", "hardware.peak_flops.fp32=1e11"])).hardware
    assert not can_probe(pinned, "none")  # the user's own ceilings are kept
    cuda = build_run_config(composed(["hardware=cuda"])).hardware
    assert not can_probe(cuda, "none")


@pytest.mark.slow
def test_a_validate_run_records_its_probes_and_is_predicted_at_them():
    from dabench.config.build import build_run_config
    from dabench.pipeline.execute import execute

    result = execute(
        build_run_config(
            composed(["hardware.mode=validate", "model.n_layers=1", "run.warmup_steps=1", "run.timed_steps=2"])
        )
    )
    assert result.status.value == "ok", result.reason
    probed = result.metrics["validate.probed_peak_flops"]
    assert 1e8 < probed < 1e13 and math.isfinite(result.metrics["validate.ceilings_drift"])
    assert result.predicted.tags["ceilings"] == IN_SITU
    # the test session's calibration fixture (10 TFLOP/s) is above any CPU: it stays the roof
    assert result.ceilings.peak_flops == pytest.approx(1e13)
    assert result.metrics["ceilings.peak_flops"] == pytest.approx(1e13)
    assert result.metrics["validate.peak_vs_calibrated"] == pytest.approx(probed / 1e13 - 1)


def test_the_probes_bracket_the_timed_steps_outside_their_clocks():
    import torch

    from dabench.backends.measure import HostClock, time_steps
    from dabench.runtime.progress import StepProgress

    calls = []

    class Steps:
        def step(self):
            calls.append("step")
            return torch.tensor(1.0)

    progress = StepProgress("steps", 3, mode="off")
    times = time_steps(Steps(), HostClock(), 1, 2, progress, on_timed_window=calls.append)
    assert calls == ["step", "before", "step", "step", "after"] and len(times) == 2
