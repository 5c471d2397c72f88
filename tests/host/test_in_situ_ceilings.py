"""Validate mode on the CPU predicts at ceilings probed around the measured run (the machine's
speed drifts), and takes every efficiency against the higher of those and the calibration."""

import math

import pytest

from dabench.core.ceilings import Ceilings
from dabench.host.calibrate import Probe, combine_probes
from dabench.host.ceilings import IN_SITU, in_situ_ceilings, uses_in_situ_ceilings
from tests.conftest import composed

CALIBRATED = Ceilings(peak_flops=100e9, bandwidth_Bps=20e9, memory_level="dram", source="calibrated")


def test_combined_probes_are_the_mean_and_the_drift_is_after_minus_before_over_the_mean():
    mean, drift = combine_probes(Probe(80e9, 10e9), Probe(120e9, 30e9))
    assert (mean.peak_flops, mean.bandwidth_Bps) == (100e9, 20e9)
    assert drift == pytest.approx(0.4)


def test_the_model_gets_the_probes_and_the_roof_is_the_higher_of_probes_and_calibration():
    model, roof, metrics = in_situ_ceilings(CALIBRATED, Probe(60e9, 30e9), Probe(60e9, 30e9))
    assert (model.peak_flops, model.bandwidth_Bps, model.source) == (60e9, 30e9, IN_SITU)
    assert (roof.peak_flops, roof.bandwidth_Bps) == (100e9, 30e9)  # calibrated peak, probed bandwidth
    assert metrics["validate.peak_vs_calibrated"] == pytest.approx(-0.4)
    assert metrics["validate.ceilings_drift"] == 0.0


def test_only_single_process_cpu_validate_runs_with_calibrated_ceilings_probe():
    from dabench.config.build import build_run_config

    cpu = build_run_config(composed(["hardware.mode=validate"])).hardware
    assert uses_in_situ_ceilings(cpu, "validate", "none")
    assert not uses_in_situ_ceilings(cpu, "measure", "none")
    assert not uses_in_situ_ceilings(cpu, "validate", "dp")
    pinned = build_run_config(composed(["hardware.mode=validate", "hardware.peak_flops.fp32=1e11"])).hardware
    assert not uses_in_situ_ceilings(pinned, "validate", "none")  # the user's own ceilings are kept
    cuda = build_run_config(composed(["hardware=cuda"])).hardware
    assert not uses_in_situ_ceilings(cuda, "validate", "none")


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
    assert result.ceilings.peak_flops == pytest.approx(max(1e13, probed))
    assert result.metrics["validate.peak_vs_calibrated"] == pytest.approx(probed / 1e13 - 1)


def test_the_probes_bracket_the_timed_steps_outside_their_clocks():
    import torch

    from dabench.backends.measure import HostClock, time_steps

    calls = []

    class Steps:
        def step(self):
            calls.append("step")
            return torch.tensor(1.0)

    times = time_steps(Steps(), HostClock(), warmup=1, timed=2, on_timed_window=calls.append)
    assert calls == ["step", "before", "step", "step", "after"] and len(times) == 2
