"""Gaudi 2 and 3: the presets compose and predict (GEMMs at the MME peak, the rest at the TPCs',
both from HBM), advise searches them with their power figures and a wide "nothing calibrated"
band; the hpu backend refuses plainly without Intel's bridge, and its clock follows the bridge's
documented lazy-mode contract (``htcore.mark_step()`` flushes, ``torch.hpu.synchronize()`` waits)."""

import sys
from types import ModuleType, SimpleNamespace

import pytest

from dabench.config.build import build_run_config
from dabench.core.platforms import preset as preset_record
from dabench.core.status import CapacityError, UnsupportedError
from dabench.host.ceilings import resolve_ceilings
from dabench.perfmodel import constants, get_predictor, reach
from dabench.workload.opgraph import build_opgraph
from tests.conftest import composed


def _rc(preset, *overrides):
    return build_run_config(composed([f"hardware={preset}", "hardware.mode=predict", "model=gpt2_small", *overrides]))


def _predict(rc):
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    return get_predictor(rc.hardware.arch)(rc, graph, resolve_ceilings(rc.hardware, rc.precision))


@pytest.mark.parametrize("preset, peak, watts", [("gaudi2", 4.32e14, 600.0), ("gaudi3", 1.835e15, 900.0)])
def test_presets_compose_and_predict(preset, peak, watts):
    rc = _rc(preset)
    assert rc.hardware.arch == "gaudi2" and rc.hardware.name == preset  # gaudi3: a generation of the family
    assert rc.hardware.backend == "hpu" and rc.precision.name == "bf16"
    assert resolve_ceilings(rc.hardware, rc.precision).peak_flops == peak
    profile = _predict(rc)
    assert profile.mode == "predict" and profile.source == "perfmodel.gaudi2" and profile.median_step_s > 0
    assert preset_record(preset).power.watts_per_chip == watts and preset_record(preset).power.sourced


def test_gaudi3_is_faster_and_the_tpcs_price_the_non_matmul_ops():
    assert _predict(_rc("gaudi3")).median_step_s < _predict(_rc("gaudi2")).median_step_s
    # TPCs 1,000x slower: the element-wise ops become TPC-bound, the GEMMs are unchanged
    slow = _predict(_rc("gaudi2", "hardware.options.vector_flops=1.1e10"))
    base = _predict(_rc("gaudi2"))
    assert slow.median_step_s > 1.5 * base.median_step_s
    assert slow.class_times_s["matmul"] == pytest.approx(base.class_times_s["matmul"])


def test_scale_out_is_paced_by_the_three_roce_ports_per_chip():
    within = _predict(_rc("gaudi3", "parallel=dp", "parallel.degree=8"))
    across = _predict(_rc("gaudi3", "parallel=dp", "parallel.degree=16"))
    assert across.median_step_s > within.median_step_s  # 75 GB/s scale-out below 525 GB/s all-to-all


def test_a_model_above_hbm_is_refused():
    with pytest.raises(CapacityError):
        _predict(_rc("gaudi2", "model=llama_70b", "run.batch_size=1"))


@pytest.mark.parametrize("preset", ["gaudi2", "gaudi3"])
def test_the_band_is_wide_and_says_nothing_calibrated(preset):
    kind, q, why = constants.half_width(preset, constants.load(), reach.coords(_rc(preset)))
    assert kind == "wide" and q is not None and q >= constants.load()["bands"]["wide"]
    assert "nothing calibrated" in why


def test_advise_searches_gaudi_with_its_power_figure():
    from dabench.advise.answer import rows
    from dabench.advise.run import Request, advise

    request = Request(model="gpt2_small", tokens=1e9, platforms=["gaudi2", "gaudi3"], max_chips=8, trials=8)
    ranked = rows(advise(request))
    assert {r["platform"] for r in ranked} == {"gaudi2", "gaudi3"}
    for r in ranked:
        assert r["status"] == "ok" and r["energy_kwh"] and "W per chip, tdp" in r["power_source"]
        assert r["tokens_per_s_hi"] / r["tokens_per_s_lo"] > 3.67**2  # at least the wide band, both ways
    reach = {r["platform"]: r["reach"] for r in ranked}
    assert reach["gaudi3"] == "OUTSIDE calibration: no calibration point on this platform"
    # gaudi2's points (IG2-*) are LLaMA 2 7B and 13B at fp8: gpt2_small at bf16 is outside them
    assert reach["gaudi2"].startswith("OUTSIDE calibration: model ~124M params < smallest calibrated ~6.74B")


def test_measure_without_the_bridge_is_unsupported_and_says_why():
    from dabench.pipeline.execute import resolve_mode
    from dabench.platforms.gaudi.backend import HpuBackend

    pytest.importorskip("torch")
    if "habana_frameworks" in sys.modules:
        pytest.skip("Intel's bridge is installed here")
    rc = _rc("gaudi2", "hardware.mode=measure")
    availability = HpuBackend.availability(rc)
    assert not availability.ok and "no Gaudi device" in availability.reason
    assert "habana_frameworks.torch.core" in availability.reason
    with pytest.raises(UnsupportedError, match="hardware.mode=measure on hardware=gaudi2: no Gaudi device"):
        resolve_mode(rc)
    assert resolve_mode(_rc("gaudi2", "hardware.mode=auto"))[0] == "predict"


@pytest.fixture
def bridge(monkeypatch):
    """Intel's bridge as documented: ``htcore.mark_step()`` and a ``torch.hpu`` namespace."""
    import torch

    calls = []
    htcore = ModuleType("habana_frameworks.torch.core")
    htcore.mark_step = lambda device_str="", sync=False: calls.append("mark_step")
    hpu = SimpleNamespace(
        is_available=lambda: True,
        synchronize=lambda: calls.append("synchronize"),
        get_device_name=lambda: "GAUDI3",
        reset_peak_memory_stats=lambda: calls.append("reset"),
        max_memory_allocated=lambda: 123,
    )
    for name in ("habana_frameworks", "habana_frameworks.torch"):
        monkeypatch.setitem(sys.modules, name, ModuleType(name))
    monkeypatch.setitem(sys.modules, "habana_frameworks.torch.core", htcore)
    monkeypatch.setattr(torch, "hpu", hpu, raising=False)
    return calls


def test_with_the_bridge_a_run_flushes_each_step_and_waits_for_the_device(bridge, monkeypatch):
    from dabench.backends import torch_device
    from dabench.platforms.gaudi.backend import HpuBackend

    rc = _rc("gaudi3", "hardware.mode=measure")
    assert HpuBackend.availability(rc).ok
    seen = {}

    def run_on_device(rc, device, clock, units, source, level, peak, tags, on_timed_window):
        seen.update(rc=rc, device=device, clock=clock, source=source, level=level, peak=peak(), tags=tags)
        return "profile"

    monkeypatch.setattr(torch_device, "run_on_device", run_on_device)
    assert HpuBackend().run(rc, None) == "profile"
    assert seen["device"].type == "hpu" and seen["source"] == "hpu:GAUDI3" and seen["level"] == "hbm"
    assert seen["peak"] == 123 and seen["tags"]["hpu.device"] == "GAUDI3" and bridge == ["reset"]
    assert not seen["rc"].run.profile_subtasks  # marks inside a step would cut the compiled graph
    bridge.clear()
    start = seen["clock"].mark()
    assert bridge == ["mark_step", "synchronize"]  # flush the lazy graph, then wait for the device
    assert seen["clock"].elapsed(start, seen["clock"].mark()) >= 0
