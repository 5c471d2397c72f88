"""precision=fp8: the blocks' GEMMs at the preset's dense FP8 peak plus the casts' bytes, the rest at
bf16's; refused before any work on a preset without FP8; measured only on a CUDA GPU with FP8 tensor
cores (torch._scaled_mm), refused plainly elsewhere."""

import copy
import re

import pytest
import torch

from dabench import predict, run
from dabench.backends import torch_train
from dabench.config.build import build_run_config, fp8_presets
from dabench.config.sections import PrecisionConfig
from dabench.core.status import ConfigError, UnsupportedError
from dabench.fit.sources import load_sources
from dabench.perfmodel.constants import PUBLISHED, half_width, resolve
from dabench.perfmodel.reach import coords
from dabench.workload.opgraph import build_opgraph
from tests.conftest import composed
from tests.perfmodel.helpers import run_config

FP8_PRESETS = ["b200", "cuda", "cuda_h100", "gaudi2", "gaudi3", "mi300x", "mi325x"]
DENSE_FP8 = {"cuda": 1.979e15, "cuda_h100": 1.979e15, "b200": 4.5e15, "mi300x": 2.6149e15, "gaudi2": 8.65e14}


def test_the_presets_with_fp8_are_the_chips_with_fp8_matrix_units():
    assert fp8_presets() == FP8_PRESETS


@pytest.mark.parametrize("name, peak", sorted(DENSE_FP8.items()))
def test_each_fp8_peak_is_dense_and_sourced(name, peak):
    assert composed([f"hardware={name}"])["hardware"]["peak_flops"]["fp8"] == peak
    entry = load_sources(name)["peak_flops.fp8"]
    assert entry.kind in ("source", "uncertain") and "dense" in entry.text


@pytest.mark.parametrize("name", ["cpu", "cuda_a100", "wse2", "wse3", "rdu", "sn40l", "ipu"])
def test_fp8_is_refused_before_any_work_where_the_chip_has_none(name):
    with pytest.raises(ConfigError) as refused:
        run_config(name, precision="fp8")
    text = str(refused.value)
    assert "precision='fp8'" in text and f"hardware={name} supports" in text
    assert "FP8 matrix units: hardware=" + ", ".join(FP8_PRESETS) in text


def _speedup(model: str) -> tuple[float, object]:
    common = [f"model={model}", "hardware=cuda_h100", "hardware.mode=predict", "run.batch_size=8"]
    bf16, fp8 = predict([*common, "precision=bf16"]), predict([*common, "precision=fp8"])
    assert bf16.status.value == fp8.status.value == "ok", (bf16.reason, fp8.reason)
    return fp8.metrics["throughput.samples_per_s"] / bf16.metrics["throughput.samples_per_s"], fp8


def test_fp8_on_h100_is_faster_than_bf16_but_short_of_twice():
    speedup, fp8 = _speedup("gpt2_xl")
    assert 1.0 < speedup < 2.0  # casts, attention, norms and the LM head stay at bf16 rates
    assert "bf16 GEMM efficiency" in fp8.predicted.tags["fp8"] and "none fits it" in fp8.predicted.tags["fp8"]
    band = fp8.notes["dabench.band"]  # the nearest point is one of NVIDIA's FP8 Llama runs on a DGX-H100
    assert band.startswith("near:") and re.search(r"nearest calibration N[BM]-H100-LLAMA", band)


def test_the_casts_are_priced_by_their_bytes():
    model = composed(["model=gpt2_small"])["model"]
    from dabench.config.build import build_model

    m = build_model(model)
    bf16 = build_opgraph(m, 2, PrecisionConfig("bf16", "bf16", "bf16"))
    fp8 = build_opgraph(m, 2, PrecisionConfig("fp8", "bf16", "bf16"))
    assert fp8.flops("fwd") > bf16.flops("fwd")
    tokens, h, f = 2 * m.seq_len, m.hidden_size, m.ffn_hidden
    # per block: forward reads X (bf16) and W and writes their FP8 copies, backward dY: 3 bytes each
    x_w = 4 * (tokens * h + h * h) + (tokens * h + h * f) + (tokens * f + f * h)
    dy = 4 * tokens * h + tokens * f + tokens * h
    block = fp8.layer("block.0").totals.bytes
    assert block["fwd"] - bf16.layer("block.0").totals.bytes["fwd"] == 3 * x_w
    assert block["bwd"] - bf16.layer("block.0").totals.bytes["bwd"] == 3 * dy
    assert fp8.layer("head").bytes == bf16.layer("head").bytes  # the LM head stays bf16


def test_measuring_fp8_on_a_cpu_is_refused_plainly():
    r = run(["hardware=cuda", "hardware.mode=measure", "precision=fp8", "model=tiny"])
    assert r.status.value == "unsupported" and "hardware.mode=measure on hardware=cuda" in r.reason
    assert "fp8 is measured on a CUDA GPU" in torch_train.fp8_unsupported(torch.device("cpu"))
    rc = run_config("cuda", precision="fp8", model="tiny")
    with pytest.raises(UnsupportedError, match="CUDA GPU with FP8 tensor cores"):
        torch_train.build_train_state(rc, torch.device("cpu"))


@pytest.mark.parametrize("capability, ok", [((8, 0), False), ((8, 6), False), ((8, 9), True), ((9, 0), True)])
def test_the_fp8_path_needs_compute_capability_8_9(monkeypatch, capability, ok):
    from dabench.platforms.gpu.backend import CudaBackend

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "GPU under test")
    cuda = torch.device("cuda", 0)
    why = torch_train.fp8_unsupported(cuda)
    assert (why is None) == ok
    if not ok:
        assert "compute capability >= 8.9" in why and "GPU under test" in why
    availability = CudaBackend.availability(run_config("cuda", precision="fp8", model="tiny"))
    assert availability.ok == ok and (ok or availability.reason == why)
    assert "divisible by 16" in torch_train.fp8_unsupported(cuda, (64, 24)) if ok else True


def test_to_fp8_swaps_the_blocks_linears_only():
    from dabench.workload.model import DecoderStack

    model = torch_train.to_fp8(DecoderStack.from_config(run_config("cuda", model="tiny").model))
    kinds = {type(m).__name__ for b in model.blocks for m in b.modules()}
    assert "Fp8Linear" in kinds and "Linear" not in kinds
    assert isinstance(model.head.lm_head, torch.nn.Linear)


def test_fp8_is_nothing_calibrated_nearby_where_no_point_runs_fp8():
    shape = ["hardware=cuda_h100", "model=llama_7b", "parallel=fsdp", "parallel.degree=8", "hardware.mode=predict"]
    mixed, fp8 = predict([*shape, "precision=mixed"]), predict([*shape, "precision=fp8"])
    assert mixed.notes["dabench.band"].startswith("near:")
    # cuda's points include fp8 runs on a B200 and on DGX-H100s: an H100 one is nearest
    assert fp8.notes["dabench.band"].startswith("near:") and re.search(r"N[BM]-H100-LLAMA", fp8.notes["dabench.band"])
    shipped = resolve(PUBLISHED)
    without = copy.deepcopy(shipped)
    band = without["platforms"]["cuda"]["band"]
    band["points"] = [p for p in band["points"] if p["coords"]["precision"] != "fp8"]
    x = coords(build_run_config(composed([*shape, "precision=fp8"])))
    kind, _, why = half_width("cuda", without, x)
    assert kind == "wide" and "no calibration point runs precision=fp8" in why
    assert half_width("cuda", shipped, x)[0] == "near"
