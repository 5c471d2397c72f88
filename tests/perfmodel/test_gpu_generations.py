"""GPU presets of generations with no calibration point (B200, MI300X, MI325X): dense peaks from their
datasheets, priced by the family's model at efficiencies no fit set, and a band that says nothing
calibrated is near, decided by the generation (never by a preset's name)."""

import pytest

from dabench import predict
from dabench.perfmodel.device import UNFITTED_EFFICIENCY
from tests.conftest import composed

#: the MPT-H100-7B calibration point's shape: 7B, 8 GPUs sharded data-parallel (FSDP), mixed precision
NEAR_H100 = ["model=llama_7b", "precision=mixed", "parallel=fsdp", "parallel.degree=8", "hardware.mode=predict"]


@pytest.mark.parametrize("name, bf16", [("b200", 2.25e15), ("mi300x", 1.3074e15), ("mi325x", 1.3074e15)])
def test_the_presets_carry_dense_peaks(name, bf16):
    hardware = composed([f"hardware={name}"])["hardware"]
    peaks = hardware["peak_flops"]
    assert hardware["name"] == name and hardware["arch"] == "cuda" and hardware["backend"] == "cuda"
    assert peaks["bf16"] == peaks["fp16"] == peaks["mixed"] == bf16
    assert peaks["fp8"] == pytest.approx(2 * bf16, rel=1e-3)  # dense FP8 is twice dense BF16 on both
    assert hardware["options"]["generation"] in ("blackwell", "cdna3")
    if name == "b200":
        assert peaks["fp4"] == 2 * peaks["fp8"] and hardware["links"][0]["bandwidth_Bps"] == 9.0e11


def test_existing_presets_keep_their_generation():
    assert {
        n: composed([f"hardware={n}"])["hardware"]["options"]["generation"] for n in ("cuda", "cuda_h100", "cuda_a100")
    } == {
        "cuda": "hopper",
        "cuda_h100": "hopper",
        "cuda_a100": "ampere",
    }


def test_an_uncalibrated_generation_is_not_priced_at_hoppers_fit():
    r = predict(["hardware=b200", *NEAR_H100])
    assert r.status.value == "ok", r.reason
    assert r.predicted.tags["efficiency"] == "unfitted: no calibration point of generation blackwell"
    as_hopper = predict(["hardware=b200", "hardware.options.generation=hopper", *NEAR_H100])
    assert "efficiency" not in as_hopper.predicted.tags
    assert as_hopper.metrics["throughput.samples_per_s"] != r.metrics["throughput.samples_per_s"]
    assert UNFITTED_EFFICIENCY == pytest.approx(0.6)  # the middle of the fit bounds [0.2, 1.0]


@pytest.mark.parametrize(
    "hardware", ["hardware=mi300x", "hardware=mi325x", "hardware=cuda_h100 hardware.options.generation=cdna3"]
)
def test_an_uncalibrated_generation_gets_the_wide_band_even_at_a_calibrated_shape(hardware):
    r = predict([*hardware.split(), *NEAR_H100])
    assert r.status.value == "ok", r.reason
    band = r.notes["dabench.band"]
    assert band.startswith("wide:") and "nothing calibrated nearby: no calibration point of generation" in band
    lo, hi = r.metrics["throughput.samples_per_s.lo"], r.metrics["throughput.samples_per_s.hi"]
    assert hi / lo > 3.67**2  # at least the wide factor (x3.67) each way


def test_a_generation_with_a_check_point_gets_its_band_from_it():
    """B200 has one check point (NB-B200-LLAMA3-8B), which fits nothing: its efficiency stays the
    unfitted middle, and a prediction beside the point takes the point's out-of-source error."""
    shape = "model=llama_7b model.ffn_size=14336 model.vocab_size=128256 ++model.n_kv_heads=8 model.seq_len=8192"
    r = predict(
        ["hardware=b200", "precision=fp8", *shape.split(), "parallel=dp", "parallel.degree=8", "run.batch_size=2"]
    )
    assert r.status.value == "ok", r.reason
    assert r.predicted.tags["efficiency"] == "unfitted: no calibration point of generation blackwell"
    band = r.notes["dabench.band"]
    assert band.startswith("near:") and "nearest calibration NB-B200-LLAMA3-8B" in band


@pytest.mark.parametrize("name", ["cuda_h100", "cuda"])
def test_calibrated_generations_keep_their_near_band(name):
    r = predict([f"hardware={name}", *NEAR_H100])
    assert r.status.value == "ok", r.reason
    assert r.notes["dabench.band"].startswith("near:")


def test_the_cli_predicts_the_new_presets_with_a_band(run_cli):
    for args in (["hardware=mi300x"], ["hardware=b200", "precision=mixed"]):
        done = run_cli(*args, "hardware.mode=predict", "model=llama_7b", "tracking.enabled=false")
        assert done.returncode == 0, done.stderr
        assert "PREDICTED" in done.stdout and " [" in done.stdout, done.stdout


def test_fp32_llama_7b_does_not_fit_a_b200():
    """fp32 weights, gradients and AdamW moments (100 GiB) and batch 4's activations exceed 180 GB."""
    r = predict(["hardware=b200", "hardware.mode=predict", "model=llama_7b"])
    assert r.status.value == "capacity" and "hbm (per GPU)" in r.reason
