"""SN30 RDU model mechanisms (dabench/platforms/rdu/model.py; docs/perfmodel.md, "SN30 RDU"): the three
compile modes as distinct section cuts, the RDU time against the SN30 table's own RDU column (no
fitted constant prices it), what mixed precision changes (the RDU's time, not the host's), and tensor
parallelism 2 -> 4 chips predicted from the links, with no constant fitted to it."""

from __future__ import annotations

import pytest

from dabench.findings import registry
from dabench.findings.registry import rdu_mixed_precision_run
from dabench.fit.points import load_points
from dabench.fit.sources import fitted
from dabench.perfmodel.comm import staged_link
from dabench.platforms.rdu import model as rdu
from dabench.workload.opgraph import build_opgraph
from tests.perfmodel.helpers import predict, run_config

MODES = ("o0", "o1", "o3")


def _gpt2(mode: str, layers: int = 12, **kw):
    return run_config("rdu", batch_size=16, model_over={"n_layers": layers}, options={"compile_mode": mode}, **kw)


def _plan(mode: str, layers: int = 12):
    """(sections per phase, knobs, micro-batch) of GPT-2 small on one RDU."""
    rc = _gpt2(mode, layers)
    k = rdu.knobs(rc)
    return rdu.sections(build_opgraph(rc.model, rc.run.batch_size, rc.precision), k, 1), k, rc.run.batch_size


def _ddr_bytes(mode: str) -> float:
    """DDR bytes of one step's sections (every run of a folded section counted)."""
    plan, k, samples = _plan(mode)
    return sum(
        sec.count * rdu.section_time(sec, k, samples).ddr_s * k.ddr_Bps for secs in plan.values() for sec in secs
    )


# ----------------------------------------------------------------------------- compile modes


def test_o0_compiles_every_operator_as_its_own_section():
    """SambaFlow docs (compiler-o1.html): o0 "compiles each operator as a separate section"; every
    op's inputs and outputs then go round DDR, and a one-stage section is perfectly balanced."""
    plan, _, _ = _plan("o0")
    assert all(len(sec.stages) == 1 and not sec.fused for secs in plan.values() for sec in secs)
    assert predict(_gpt2("o0"))[1]["tier1.load_imbalance"] == pytest.approx(1.0)


def test_o1_fuses_inside_a_layer_and_o3_across_layers():
    """o1 fuses operators under fusion rules (scoped to a layer here: a decoder block's sections
    repeat once per block); o3 uses "the full graph optimization scope": its sections run stages of
    consecutive layers, so it needs fewer sections than o1, and o1 fewer than o0."""
    o1, _, _ = _plan("o1")
    assert any(sec.fused for secs in o1.values() for sec in secs)
    for secs in o1.values():
        for sec in secs:
            kinds = {stage.name.split(".")[0] for stage in sec.stages}  # embedding | block | head
            assert len(kinds) == 1
            assert sec.count == (12 if kinds == {"block"} else 1)  # one block's sections, run once per block
    o3, _, _ = _plan("o3")
    spans = [sec for secs in o3.values() for sec in secs if len({id(s) for s in sec.stages}) < len(sec.stages)]
    assert spans, "an o3 section holds the same block stage twice: it spans decoder blocks"
    counts = {mode: predict(_gpt2(mode))[1]["rdu.sections"] for mode in MODES}
    assert counts["o0"] > counts["o1"] > counts["o3"]


def test_what_crosses_ddr_falls_with_fusion():
    """o0 moves every op's operands through DDR; fused sections move weights, gradients, the
    activations saved for backward and the activation at each section edge only. o1 and o3 move the
    same weights, gradients and saved activations, so they differ only by their edges (and by the
    stages the greedy packing leaves alone): within 10% of each other, both well below o0."""
    traffic = {mode: _ddr_bytes(mode) for mode in MODES}
    assert traffic["o0"] > 1.3 * max(traffic["o1"], traffic["o3"])
    assert abs(traffic["o1"] / traffic["o3"] - 1) < 0.10


def test_the_modes_differ_as_the_paper_reports():
    """Paper: allocation rarely above 60%, behaviour differs across O0/O1/O3, and O3's load balance
    worsens as layers grow. Fusion fills more of the chip per section (o0 < o1 < o3, all <= ~61%),
    o0's one-stage sections stay balanced at every depth while o3's LI falls, and o0, paying a DDR
    round trip per operator, is the slowest."""
    metrics = {mode: predict(_gpt2(mode))[1] for mode in MODES}
    alloc = [metrics[mode]["tier1.allocation_ratio"] for mode in MODES]
    assert alloc[0] < alloc[1] < alloc[2] <= 0.61
    speed = {mode: metrics[mode]["throughput.samples_per_s"] for mode in MODES}
    assert speed["o0"] < min(speed["o1"], speed["o3"])
    li = {mode: [predict(_gpt2(mode, layers))[1]["tier1.load_imbalance"] for layers in (1, 12, 36)] for mode in MODES}
    assert li["o0"] == pytest.approx([1.0, 1.0, 1.0])
    assert li["o3"][0] > li["o3"][1] > li["o3"][2]


# ----------------------------------------------------------------------------- RDU time, unfitted

#: DABench-LLM artifact sambanova_results.numbers sheet 1 (../shared/reference/calibration-data.md):
#: (embd, layers, heads, RDU ms per step), batch 16, seq 1024, O3, 8 tiles
SN30_RDU_MS = [
    (1600, 1, 25, 314),
    (1600, 6, 25, 666),
    (1600, 12, 25, 1088),
    (1600, 24, 25, 1934),
    (1600, 36, 25, 2783),
    (3200, 1, 25, 622),
    (1280, 36, 20, 1986),
    (1024, 24, 16, 954),
    (768, 12, 12, 409),
    (480, 12, 12, 455),
]


@pytest.mark.parametrize(("hidden", "layers", "heads", "rdu_ms"), SN30_RDU_MS)
def test_rdu_time_matches_the_tables_rdu_column(hidden, layers, heads, rdu_ms):
    """The fit sees samples/s only and its constants are host time; the RDU time comes from sections,
    PCU shares and DDR with no fitted constant (pcu_efficiency and section_switch_s are stated
    assumptions), so the table's separate RDU column is a check the model can fail: within 35%."""
    rc = run_config(
        "rdu",
        batch_size=16,
        model_over={"hidden_size": hidden, "n_layers": layers, "n_heads": heads},
        options={"compile_mode": "o3"},
    )
    device_ms = predict(rc)[1]["rdu.device_s"] * 1e3
    assert abs(device_ms / rdu_ms - 1) <= 0.35


#: the table's "sections" column for the same rows
SN30_SECTIONS = [12, 37, 66, 126, 185, 24, 159, 93, 45, 18]


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced: the PMU packing closes a section on memory only and gives ~1/3.5 of the "
    "table's sections (9, 15, 22, 37, 52 vs 12, 37, 66, 126, 185 at 1600 x 1-36; 40/159, 22/93, "
    "12/45, 8/18); full-width 16-lane packing matches the counts but not the RDU time (docs/perfmodel.md)",
)
def test_o3_section_counts_follow_the_tables_sections_column():
    for (hidden, layers, heads, _), table in zip(SN30_RDU_MS, SN30_SECTIONS, strict=True):
        rc = run_config(
            "rdu",
            batch_size=16,
            model_over={"hidden_size": hidden, "n_layers": layers, "n_heads": heads},
            options={"compile_mode": "o3"},
        )
        assert abs(predict(rc)[1]["rdu.sections"] / table - 1) <= 0.35


def test_rdu_fits_fewer_constants_than_points_and_the_fit_holds_the_shipped_values():
    """PCU efficiency and section switch were set by a bounded fit to the SN30 table, so they are
    ``fitted`` (cross-validation refits them); refitting from the shipped values keeps them."""
    from dabench.fit.refit import refit

    points = [p for p in load_points() if p.platform == "rdu" and p.use == "fit"]
    consts = fitted("rdu")
    assert {"options.pcu_efficiency", "options.section_switch_s"} <= set(consts)
    assert len(consts) < len(points)
    result = refit("rdu")
    assert result.values == pytest.approx(result.before, rel=1e-3)


# ----------------------------------------------------------------------------- mixed precision


def _mp(model: str) -> dict[str, dict[str, float]]:
    return {p: predict(run_config("rdu", model=model, batch_size=16, precision=p))[1] for p in ("mixed", "fp32")}


def _host_s(metrics: dict[str, float]) -> float:
    return metrics["host.fraction"] * metrics["step_time.median_s"]


@pytest.mark.parametrize("model", ["gpt2_test", "gpt2_small", "llama_7b"])
def test_mixed_precision_changes_the_rdu_time_only(model):
    """SambaFlow mixed precision (the artifact's --graphamp-preset mp4: every op's inputs downcast to
    bf16, docs.sambanova.ai mixed-precision.html) changes what runs on the RDU: the PCU rate (fp32 at
    half the bf16 rate, an assumption) and the bytes of activations in PMUs and DDR; the host's time
    per step does not change. The gain is therefore host share + (1 - host share) x the RDU's fp32
    slowdown."""
    m = _mp(model)
    mixed, fp32 = m["mixed"], m["fp32"]
    assert _host_s(fp32) == pytest.approx(_host_s(mixed), rel=1e-9)
    host = mixed["host.fraction"]
    slowdown = fp32["rdu.device_s"] / mixed["rdu.device_s"]
    gain = mixed["throughput.samples_per_s"] / fp32["throughput.samples_per_s"]
    assert gain == pytest.approx(host + (1 - host) * slowdown, rel=1e-9)
    assert 1.8 <= slowdown <= 2.3  # compute-bound sections at half the rate, plus the fp32 bytes


def _study(precision: str, **options: str) -> float:
    return registry.throughput(rdu_mixed_precision_run(precision, **options))


def test_precision_knobs_order_the_artifacts_llama_variants_as_measured():
    """The artifact's LLaMA study (sambaNova/mixed_precision.ipynb): mix 0.21 > weight_grad_reduce fp32
    0.184 > tiling_accum fp32 0.178 > close_mix 0.156 ~ close_mix_two 0.153. A GEMM runs 16-bit only
    when its inputs and its accumulation are: fp32 tile accumulation slows the forward and data-gradient
    GEMMs, fp32 weight-gradient accumulation the other half of backward, and once every op is fp32 the
    accumulation modes no longer matter."""
    mix = _study("mixed")
    wgrad = _study("mixed", weight_grad_reduce="fp32")
    tiling = _study("mixed", tiling_accum="fp32")
    close = _study("fp32")
    close_two = _study("fp32", tiling_accum="fp32", weight_grad_reduce="fp32")
    assert mix > wgrad > tiling > close
    assert close_two == pytest.approx(close, rel=0.03)


def test_fp32_logits_and_skip_adds_slow_mixed_precision_a_little():
    """Model Zoo keeps the loss's logits and the residual adds in fp32 (base_config_rdu.yaml): a few
    FLOPs at the 32-bit rate, in stages that rarely set their section's pace."""
    plain = _study("mixed", fp32_logits=False, fp32_skip_add=False)
    assert _study("mixed") <= plain <= 1.05 * _study("mixed")
    rc = run_config("rdu", model="gpt2_small", batch_size=16, options={"fp32_logits": True, "fp32_skip_add": True})
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    fwd = rdu.sections(graph, rdu.knobs(rc), 1)["fwd"]
    loss = next(s for sec in fwd for s in sec.stages if s.name.endswith("loss.fwd"))
    assert loss.work == 2 * loss.flops


# ----------------------------------------------------------------------------- tensor parallelism


def _tp(t: int, chips_per_node: int):
    profile, metrics = predict(
        run_config("rdu", parallel="tp", degree=t, batch_size=16, hw={"chips_per_node": chips_per_node})
    )
    return profile, metrics["throughput.samples_per_s"]


def test_tensor_parallel_exchanges_go_through_one_rdu_and_the_hosts():
    """SambaFlow's tensor parallelism (docs.sambanova.ai tensor-parallel.html): partial results are
    added on one RDU after p2p transfers, which also sends the input out. With 2 RDUs per machine, 4
    chips put 2 peers in the other machine: each exchange moves 2 x 2 messages through host staging
    (PCIe out, network, PCIe in), 4 per block per step (2 forward, 2 backward)."""
    rc = run_config("rdu", parallel="tp", degree=4, batch_size=16, hw={"chips_per_node": 2})
    k = rdu.knobs(rc)
    inter = next(link for link in rc.hardware.links if link.scope == "inter")
    message = 16 * rc.model.seq_len * rc.model.hidden_size * 2
    link = staged_link(inter, k.options.host_link_Bps)
    per_exchange = 2 * 2 * (message / link.bandwidth_Bps + link.latency_s) + 2 * k.options.machine_collective_s
    profile, _ = _tp(4, 2)
    (event,) = [e for e in profile.comm if e.strategy == "tp"]
    assert event.count == 4 * rc.model.n_layers
    assert event.time_s == pytest.approx(event.count * per_exchange, rel=1e-9)


def test_tensor_parallel_two_to_four_chips_loses_throughput_only_across_machines():
    across = {t: _tp(t, 2)[1] for t in (2, 4)}
    inside = {t: _tp(t, 8)[1] for t in (2, 4)}
    assert inside[4] / inside[2] > 0.95  # the RDU fabric inside one machine
    assert across[4] / across[2] < 0.85  # the host-staged exchanges cost a sixth of the step or more


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced: predicted from the links with no constant fitted to it, 4 chips over 2 "
    "machines keep 74% of 2 chips' samples/s (7.53 -> 5.56; the 48 host-staged exchanges take 0.79 s "
    "of a 2.88 s step); the paper's ~60% would need ~1.45 s, i.e. links at ~0.54x the assumed PCIe "
    "Gen4 x16 (25 GB/s) and 100 GbE (12.5 GB/s)",
)
def test_tensor_parallel_two_to_four_chips_keeps_50_to_70_percent():
    """Paper: ~40% lost from 2 to 4 chips because inter-machine communication is expensive."""
    assert 0.50 <= _tp(4, 2)[1] / _tp(2, 2)[1] <= 0.70


def test_rdu_tp4_is_fitted_by_no_constant():
    point = next(p for p in load_points() if p.id == "RDU-TP4")
    assert point.use == "excluded"
    assert all("RDU-TP4" not in entry.points for entry in fitted("rdu").values())


@pytest.mark.parametrize("on_rdu", [True, False])
def test_data_parallel_gradients_between_machines_follow_reduce_on_rdu(on_rdu):
    """--reduce-on-rdu: the gradient ring runs over the network straight from RDU memory (SambaFlow's
    collective library); without it every byte is staged through both hosts, plus the host software
    of one exchange between machines."""
    rc = run_config(
        "rdu",
        parallel="dp",
        degree=4,
        batch_size=16,
        hw={"chips_per_node": 2},
        options={"reduce_on_rdu": on_rdu},
    )
    k = rdu.knobs(rc)
    profile, _ = predict(rc)
    (event,) = [e for e in profile.comm if e.strategy == "dp"]
    inter = next(link for link in rc.hardware.links if link.scope == "inter")
    link = inter if on_rdu else staged_link(inter, k.options.host_link_Bps)
    ring = 2 * 3 / 4 * event.bytes / link.bandwidth_Bps + 2 * 3 * link.latency_s
    assert event.time_s == pytest.approx(ring + (0 if on_rdu else k.options.machine_collective_s), rel=1e-9)
