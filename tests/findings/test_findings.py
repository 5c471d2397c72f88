"""The DABench-LLM paper's headline findings (reference/mission.md), checked on the analytical
models' own outputs. Where a model does not reproduce a finding from its mechanisms, the test is a
strict xfail that says so (docs/perfmodel.md explains why); it fails loudly if that changes."""

import re

import pytest

from dabench.core.status import CapacityError
from dabench.findings import registry
from dabench.findings.registry import rdu_mixed_precision_run
from tests.conftest import need_shared_fixtures
from tests.perfmodel.helpers import load, predict, run_config

#: the artifact's layer-scaling script (full_run_benchmark_scalling.sh, paper-notes 4.2), which runs
#: --enable-half-partials False: fp16 inputs with fp32 matmul partials
PAPER_IPU = {
    "available_memory_proportion": 0.15,
    "embedding_serialization_factor": 4,
    "device_iterations": 8,
    "half_partials": False,
}


def paper_placements() -> list[str]:
    """The layers-per-IPU placements of the default IPU sweep (paper-notes section 7.5), as the
    sweep expands them from the composed config (``hardware=ipu parallel=pp -m``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from dabench.pipeline.grid import expand

    parser = OverridesParser.create()
    return [
        str(parser.parse_override(o).value())
        for job in expand(["hardware=ipu", "parallel=pp"])
        for o in job
        if o.startswith("parallel.placement=")
    ]


def ipu(placement: str, precision: str = "fp16", grad_accum: int = 2048, **options):
    return run_config(
        "ipu",
        model="gpt2_test",
        precision=precision,
        parallel="pp",
        placement=placement,
        batch_size=1,
        grad_accum=grad_accum,
        options={**PAPER_IPU, **options},
        model_over={"tie_embeddings": True},
    )  # GPT2LMHeadModel, as conf/default_sweep/ipu_pp.yaml


def throughput(rc) -> float:
    return predict(rc)[1]["throughput.samples_per_s"]


@pytest.fixture(scope="module")
def ipu_sweep():
    """{placement: (profile, metrics) or CapacityError} over the paper's placements."""
    out = {}
    for placement in paper_placements():
        try:
            out[placement] = predict(ipu(placement))
        except CapacityError as error:
            out[placement] = error
    return out


# ----------------------------------------------------------------------------- WSE-2


def _compile_report(number: int) -> tuple[float, float]:
    """(Samples/s, Active PEs %) printed at the top of a fixture compile report."""
    text = (need_shared_fixtures() / "cerebras" / "compile_reports" / f"compile_report_{number}.txt").read_text()
    rate = float(re.search(r"^Samples/s:\s+([\d.]+)", text, re.M).group(1))
    active = float(re.search(r"^Active PEs:\s+([\d.]+)%", text, re.M).group(1))
    return rate, active


def encdec(layers: int, **kw):
    """The artifact's Model Zoo encoder-decoder sweep, enc = dec = ``layers``."""
    return run_config(
        "wse2",
        model="cerebras_encdec",
        batch_size=kw.pop("batch_size", 128),
        model_over={"n_layers": 2 * layers, "cross_attention_layers": layers},
        **kw,
    )


@pytest.mark.parametrize("report,layers", [(7, 6), (11, 12), (13, 18)])
def test_wse2_reproduces_the_fixture_compile_reports(report, layers):
    """Samples/s within 10% and Active PEs within 5 points of the real compiler's estimate, one
    copy of the model (no replication the reports do not show)."""
    rate, active = _compile_report(report)
    profile, metrics = predict(encdec(layers, options={"compile_estimate": True}))
    assert abs(metrics["throughput.samples_per_s"] / rate - 1) <= 0.10
    assert abs(100 * metrics["tier1.allocation_ratio"] - active) <= 5
    assert profile.extra_metrics["wse2.replicas"] == 1


def test_wse2_allocation_saturates_in_the_90s_as_the_sweep_deepens():
    """The encoder-decoder sweep: allocation grows with depth while the kernels' pace sets their PEs;
    once the region's placeable PEs run out the compiler scales kernels down, so the highest is the
    paper's 92-93% and a deeper model runs slower on fewer PEs per kernel, not at a cap."""
    runs = {n: predict(encdec(n, options={"compile_estimate": True}))[1] for n in (*range(6, 73, 6), 68, 70, 76)}
    share = {n: m["tier1.allocation_ratio"] for n, m in runs.items()}
    assert share[6] < share[12] < share[18]
    assert 0.915 <= max(share.values()) < 0.935
    rate = {n: m["throughput.samples_per_s"] for n, m in runs.items()}
    assert rate[76] < rate[72] < rate[70] < rate[68] == pytest.approx(rate[60])  # the pace, then fewer PEs


def test_wse2_balances_near_perfectly():
    """LI about 0.96-1.0 (paper): GPT-2 small on one wafer and the encoder-decoder sweep."""
    assert predict(run_config("wse2", batch_size=112))[1]["tier1.load_imbalance"] >= 0.95
    for layers in (6, 36, 72):
        assert predict(encdec(layers))[1]["tier1.load_imbalance"] >= 0.95


def test_wse2_pipelined_fails_beyond_the_papers_72_layers_with_the_reason():
    for layers in (6, 24, 48, 72):
        predict(encdec(layers))
    with pytest.raises(CapacityError) as error:
        predict(encdec(78))
    assert error.value.memory == "wse2 on-wafer SRAM" and error.value.needed_bytes > error.value.available_bytes
    assert "72 layers" in str(error.value)


def test_wse2_activation_stash_grows_with_the_square_of_depth():
    """Each kernel waits for the barriers of every attention behind it: the stash is quadratic in depth."""

    def stash(layers):
        profile, _ = predict(run_config("wse2", batch_size=112, model_over={"n_layers": layers}))
        return profile.extra_metrics["wse2.stash_bytes"]

    s6, s12, s24 = stash(6), stash(12), stash(24)
    assert 3.5 < (s24 - s12) / (s12 - s6) < 4.5  # (24*23 - 12*11) / (12*11 - 6*5) = 4.1 for the block terms


def test_wse2_fails_on_capacity_as_layers_grow():
    """On-chip SRAM limits larger GPT-2 stacks; once a depth fails, every deeper one fails."""
    outcomes = {}
    for layers in (6, 12, 18, 24, 36, 48, 72):
        try:
            predict(run_config("wse2", batch_size=112, model_over={"n_layers": layers}))
            outcomes[layers] = "ok"
        except CapacityError as error:
            assert error.memory == "wse2 on-wafer SRAM" and error.needed_bytes > error.available_bytes
            outcomes[layers] = "capacity"
    assert outcomes[6] == outcomes[12] == "ok" and outcomes[72] == "capacity"
    first_failure = min(n for n, status in outcomes.items() if status == "capacity")
    assert all(status == "capacity" for n, status in outcomes.items() if n >= first_failure)


def test_wse2_samples_per_s_is_flat_beyond_batch_200():
    """Each step drains the pipeline: GPT-2 small's 12 backward barriers cost 12 samples' time per
    step, so the batch gains until ~200 and little after (the steady rate does not depend on it)."""
    base = throughput(run_config("wse2", batch_size=224))
    for batch in (256, 448, 1024):
        assert abs(throughput(run_config("wse2", batch_size=batch)) / base - 1) <= 0.05
    assert throughput(run_config("wse2", batch_size=16)) < 0.7 * base


def test_wse2_mixed_precision_gain_is_the_papers_size():
    """Paper: +10.7% (GPT-2 small, the artifact's R2.3.0 weight-streaming bf16 and fp16 runs: batch
    112, MSL 2048); within a third: 7.1-14.3%. fp16 pays dynamic loss scaling in the backward pass,
    a share fitted to this one point (WSE-MP): the finding is fitted, not predicted."""
    kw = {"batch_size": 112, "options": {"execution_mode": "weight_streaming"}, "model_over": {"seq_len": 2048}}
    gain = (
        throughput(run_config("wse2", precision="mixed", **kw)) / throughput(run_config("wse2", precision="fp16", **kw))
        - 1
    )
    assert 0.107 * 2 / 3 <= gain <= 0.107 * 4 / 3
    # layer-pipelined GPT-2 small streams at the kernels' pace, so fp16's extra backward work costs no rate
    pipelined = (
        throughput(run_config("wse2", batch_size=112, precision="mixed"))
        / throughput(run_config("wse2", batch_size=112, precision="fp16"))
        - 1
    )
    assert 0.0 <= pipelined <= 0.2


@pytest.mark.parametrize(
    "model,batch,over",
    [("gpt2_small", 112, {"seq_len": 2048}), ("gptj_6b", 65, {}), ("llama_7b", 99, {}), ("bert_large", 1024, {})],
)
def test_wse2_weight_streaming_runs_what_real_cs2s_ran(model, batch, over):
    """C5, C6-C11 of the calibration data ran on real CS-2s: weight streaming keeps one layer's
    weights at a time and splits the batch into micro-batches, so none is refused."""
    profile, metrics = predict(
        run_config(
            "wse2", model=model, batch_size=batch, model_over=over, options={"execution_mode": "weight_streaming"}
        )
    )
    assert metrics["throughput.samples_per_s"] > 0 and profile.extra_metrics["wse2.micro_batches"] >= 1


# ----------------------------------------------------------------------------- RDU


@pytest.mark.parametrize("mode", ["o0", "o1"])
def test_rdu_allocation_stays_at_most_about_60_percent(mode):
    """PCU allocation rarely above 60% (paper), for the safe and the fused compile modes. Allocation
    is the compiler reports' statistic: the mean over compiled sections of used / the chip's PCUs
    (as profiles/sambaflow.py reads a real compile folder, which has no section times)."""
    for layers in (1, 6, 12, 24):
        _, metrics = predict(
            run_config("rdu", batch_size=16, model_over={"n_layers": layers}, options={"compile_mode": mode})
        )
        assert metrics["tier1.allocation_ratio"] <= 0.60


#: GPT-2 ties its LM head to the token table, so one AdamW stage updates the table (untied: two, one
#: per copy); the optimizer section's power-of-two PCU shares then fill it a little more
_TIED_OPTIMIZER_SECTION = (
    "tied GPT-2 small (HF GPT2LMHeadModel, as in SambaNova's GPT-2 tutorial): forward and "
    "backward sections are the untied model's, but the one optimizer section updates the "
    "token table in one AdamW stage instead of two, and its power-of-two PCU shares come to "
    "{} of the chip, so the mean over compiled sections is {} (o3 at 1, 6, 12, 24, 36 "
    "layers: 60.01, 57.86, 59.49, 61.04, 58.88%; untied 59.29, 58.35, 59.49, 59.86, 58.88%); "
    "the paper says rarely above 60%, this bound is at most 60%"
)


def _over_60(optimizer_pcus: str, mean: str):
    return pytest.mark.xfail(strict=True, reason=_TIED_OPTIMIZER_SECTION.format(optimizer_pcus, mean))


@pytest.mark.parametrize(
    "layers",
    [
        pytest.param(1, marks=_over_60("641/1,280", "60.01%")),
        6,
        12,
        pytest.param(24, marks=_over_60("897/1,280", "61.04%")),
        36,
    ],
)
def test_rdu_o3_allocation_at_most_about_60_percent(layers):
    """o3 sections fill the 0.8-scaled PCU budget and power-of-two parallelisation idles part of it;
    over the compiled sections (the compiler reports' mean, unweighted) that is 58-61% at 1-36
    layers. The busiest section (the vocabulary-wide head) takes the whole budget, 80% of the
    chip (the SN30 table's "highest PCU util" for GPT-2 small: 77%)."""
    _, metrics = predict(
        run_config("rdu", batch_size=16, model_over={"n_layers": layers}, options={"compile_mode": "o3"})
    )
    assert metrics["tier1.allocation_ratio"] < metrics["rdu.allocation_ratio_max.pcus"] <= 0.80
    assert 0.5 <= metrics["tier1.allocation_ratio"] <= 0.60


def _rdu_li(mode: str, layers: int) -> float:
    return predict(run_config("rdu", batch_size=16, model_over={"n_layers": layers}, options={"compile_mode": mode}))[
        1
    ]["tier1.load_imbalance"]


def test_rdu_o3_balance_worsens_as_layers_grow():
    """o3 packs stages across layers until the PMUs (weights plus one sample's output buffers) are
    full; deeper stacks give sections of more, unequal stages, so the time-weighted LI falls."""
    values = [_rdu_li("o3", layers) for layers in (1, 6, 12, 24, 36)]
    assert all(later < earlier for earlier, later in zip(values, values[1:], strict=False))


def test_rdu_o1_balance_worsens_as_layers_grow():
    """The mechanism the model does have: fused block sections are less balanced than the
    embedding and head sections, and dominate the time-weighted LI as layers grow."""
    values = [_rdu_li("o1", layers) for layers in (1, 6, 12, 24, 36)]
    assert all(later < earlier for earlier, later in zip(values, values[1:], strict=False))


def test_rdu_is_memory_bound_on_its_ddr():
    _, metrics = predict(run_config("rdu", batch_size=16))
    assert metrics["diagnosis.memory_bound"] == 1.0
    assert metrics["roofline.step.intensity"] < metrics["roofline.ridge_intensity"]


def test_rdu_tensor_parallelism_across_machines_loses_throughput():
    """2 -> 4 chips with tensor parallelism loses throughput once the group spans machines (paper: -40%)."""
    across = {
        t: throughput(run_config("rdu", parallel="tp", degree=t, batch_size=16, hw={"chips_per_node": 2}))
        for t in (2, 4)
    }
    inside = {t: throughput(run_config("rdu", parallel="tp", degree=t, batch_size=16)) for t in (2, 4)}
    assert across[4] < across[2]
    assert across[4] / across[2] < inside[4] / inside[2]


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced (no constant is fitted to it): SambaFlow's p2p exchanges through one RDU, "
    "the other machine's 2 peers staged through the hosts (PCIe Gen4 x16 25 GB/s, 100 GbE 12.5 GB/s), "
    "keep 74% (7.53 -> 5.56 samples/s; 0.79 s of exchanges in a 2.88 s step); 60% needs ~1.45 s",
)
def test_rdu_tensor_parallel_two_to_four_chips_loses_30_to_50_percent():
    """Paper: ~40% lost from 2 to 4 chips "because inter-machine communication is expensive"; with 2
    RDUs per machine the 4-chip group's 48 tensor-parallel exchanges per step are staged through the
    hosts (PCIe out, network, PCIe in); tests/platforms/rdu/test_mechanisms.py checks the mechanism."""
    across = {
        t: throughput(run_config("rdu", parallel="tp", degree=t, batch_size=16, hw={"chips_per_node": 2}))
        for t in (2, 4)
    }
    inside = {t: throughput(run_config("rdu", parallel="tp", degree=t, batch_size=16)) for t in (2, 4)}
    assert 0.50 <= across[4] / across[2] <= 0.70
    assert inside[4] / inside[2] > 0.95  # the RDU fabric inside one machine: no host staging


def test_rdu_every_cross_machine_collective_is_staged_through_the_hosts():
    """Data-parallel gradients between machines pay the same per-collective host cost (and the PCIe
    staging) as tensor-parallel activations; the same group inside one machine pays neither."""
    per_collective = float(load("hardware", "rdu")["options"]["machine_collective_s"])

    def step(chips_per_node):
        profile, _ = predict(
            run_config("rdu", parallel="dp", degree=4, batch_size=16, hw={"chips_per_node": chips_per_node})
        )
        return profile.step_times_s[0]

    assert step(2) - step(8) > per_collective


# ----------------------------------------------------------------------------- IPU


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced as a level, and not together with +22%: efficiency counts model FLOPs (no "
    "recompute) against FP16.16, so a recomputed layer IPU reaches at most 3/4 of its AMP share, while the "
    "precision gain is at least 1 + the busiest IPU's AMP share (fp32 partials double the AMP vertex cycles): "
    "+29.3% at most holds them to 22%. With amp_efficiency fitted to G2-G9 the best placement reaches 12% "
    "(fp32 partials), 19% (half); none exceeds 41%; see docs/perfmodel.md",
)
def test_ipu_compute_efficiency_is_at_most_about_41_percent(ipu_sweep):
    """'Up to 41%' is the best of the paper's IPU runs: the layer-scaling script's fp32 partials (the
    sweep) and run_benchmark.sh's half partials (the same placements, the AMP at twice the rate)."""
    full = [result[1]["tier1.compute_efficiency"] for result in ipu_sweep.values() if isinstance(result, tuple)]
    half = []
    for placement in paper_placements():
        try:
            half.append(predict(ipu(placement, half_partials=True))[1]["tier1.compute_efficiency"])
        except CapacityError:
            pass
    assert len(full) >= 20 and len(half) == len(full)
    assert max(full + half) <= 0.41
    assert max(half) > 0.25  # the best placements are not far from it
    assert max(full) < max(half)


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced: on the roofline the op graph sits at 216 FLOP/B, right of the SRAM ridge (5.3); "
    "by time the matched pair's busiest IPU moves data 43% (half partials) and 33% (fp32) of its time "
    "(ipu.memory_share). Its AMP time is what the MLPerf BERT rates (G2-G9) leave once exchange (11 TB/s), "
    "load/store (8 B/cycle/tile), IPU-Links and streaming memory are priced; even at the AMP's full peak "
    "the data movement is 54% / 43%; see docs/perfmodel.md",
)
def test_ipu_is_memory_bound(ipu_sweep):
    assert all(result[1]["diagnosis.memory_bound"] == 1.0 for result in ipu_sweep.values() if isinstance(result, tuple))


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced with the scripts' real defaults: train_gpt2.py keeps optimizer state off chip "
    "(--optimizer-state-offchip defaults to True), and then '0 10' fits IPU 1 at 63% (8 layers: 56%); "
    "only with the moments on chip does it fail (974 of 896 MiB). A layer costs IPU 1 3.5% (fp16 weights and "
    "accumulators, its checkpoint stashed for 3 micro-batches); refusing 10 but fitting 8 needs over 7.2% "
    "per layer, and no sourced term (outlined layer code, temporaries bounded by the matmul proportion) "
    "adds it; see docs/perfmodel.md",
)
def test_ipu_capacity_fails_for_ten_layers_on_two_ipus():
    """'0 10' is the artifact's capacity probe for 2 IPUs; 8 layers still fit. The artifact's scripts
    leave --optimizer-state-offchip at train_gpt2.py's default (True)."""
    sweep = {}
    for placement in ("0 8", "0 10"):
        try:
            sweep[placement] = predict(ipu(placement, optimizer_state_offchip=True))
        except CapacityError as error:
            sweep[placement] = error
    failure = sweep["0 10"]
    assert isinstance(failure, CapacityError) and failure.memory == "ipu1 In-Processor-Memory"
    assert isinstance(sweep["0 8"], tuple)
    assert sweep["0 8"][1]["ipu.max_memory_fraction"] > 0.8


def test_ipu_throughput_is_set_by_the_most_loaded_ipu(ipu_sweep):
    for placement, result in ipu_sweep.items():
        if not isinstance(result, tuple):
            continue
        profile, metrics = result
        busiest = max(s.time_s for s in profile.subtasks)
        # with 2048 micro-batches the step is the busiest IPU's work plus little else
        assert profile.step_times_s[0] == pytest.approx(busiest, rel=0.06), placement
        assert metrics["ipu.bottleneck_ipu"] == max(
            range(len(profile.subtasks)), key=lambda i: profile.subtasks[i].time_s
        )


@pytest.mark.parametrize(
    "balanced,skewed", [("0 4 4 4", "0 6 3 3"), ("0 2 3 3", "0 4 2 2"), ("0 2 2 2 2 2 3 3", "0 3 3 2 2 2 2 2")]
)
def test_ipu_minimising_the_maximum_layers_per_ipu_wins(ipu_sweep, balanced, skewed):
    fast, slow = ipu_sweep[balanced][1], ipu_sweep[skewed][1]
    assert fast["ipu.max_layers_per_ipu"] <= slow["ipu.max_layers_per_ipu"]
    assert fast["throughput.samples_per_s"] >= slow["throughput.samples_per_s"]


def test_ipu_over_provisioning_leaves_tiles_idle(ipu_sweep):
    """Limited by tile use: IPUs given no layer sit idle."""
    assert ipu_sweep["0 1 1 1 1 0 0 0"][1]["tier1.allocation_ratio"] < 0.7
    assert ipu_sweep["0 2 2 2 2 2 1 1"][1]["tier1.allocation_ratio"] == 1.0


# ----------------------------------------------------------------------------- deployment


def test_batch_size_near_linear_on_rdu_and_ipu_and_flattening_on_wse2():
    """Doubling the batch at each platform's study point: RDU gains much more than WSE-2,
    whose layer pipeline has already amortised most of its fill past ~200 samples."""
    rdu = throughput(run_config("rdu", batch_size=32, options={"compile_mode": "o3"})) / throughput(
        run_config("rdu", batch_size=16, options={"compile_mode": "o3"})
    )

    wse = throughput(run_config("wse2", batch_size=448)) / throughput(run_config("wse2", batch_size=224))
    assert rdu > 1.5
    assert wse < 1.3 and wse - 1 < 0.6 * (rdu - 1)


def ipu_batch_study(grad_accum: int, hw: dict | None = None, **options) -> float:
    """The paper's batch study (gpt_batchsize_benchmark.sh): gradient accumulation on 4 IPUs, max-len
    512, embedding serialisation 8, device iterations 8, half partials, optimizer state off chip;
    `--layers-per-ipu 0 3 3 3 3` places config_test.json's 4 layers 3 on IPU 1 and 1 on IPU 2
    (train_gpt2.py fills the layers in that order); ``hw`` changes the hardware spec, ``options`` its
    options."""
    return throughput(
        run_config(
            "ipu",
            model="gpt2_test",
            precision="fp16",
            parallel="pp",
            placement="0 3 1 0",
            batch_size=1,
            grad_accum=grad_accum,
            hw=hw,
            options={
                **PAPER_IPU,
                "embedding_serialization_factor": 8,
                "optimizer_state_offchip": True,
                "half_partials": True,
                **options,
            },
            model_over={"tie_embeddings": True, "seq_len": 512},
        )
    )


def test_ipu_batch_size_gain_is_near_linear():
    """Reproduced by the per-call cost fitted to the MLPerf BERT series (G2-G9: the same placement at
    gradient accumulation 256 down to 36), amortised over device iterations 8, plus the off-chip
    moments: doubling 13 -> 26 micro-batches halves ~31 ms of fixed cost per step."""
    assert ipu_batch_study(26) / ipu_batch_study(13) > 1.5


def test_mixed_precision_helps_rdu_and_ipu_far_more_than_wse2():
    rdu = throughput(run_config("rdu", batch_size=16, precision="mixed")) / throughput(
        run_config("rdu", batch_size=16, precision="fp32")
    )
    ipu_gain = throughput(ipu("0 4 4 4", precision="mixed")) / throughput(ipu("0 4 4 4", precision="fp32"))
    # CSX has no fp32 training: its alternative to mixed is fp16 (with loss scaling); paper +10.7%
    wse = throughput(run_config("wse2", batch_size=112, precision="mixed")) / throughput(
        run_config("wse2", batch_size=112, precision="fp16")
    )
    assert rdu > 1.2 and ipu_gain > 1.2
    assert wse - 1 < min(rdu, ipu_gain) - 1


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced: +91% on the artifact's LLaMA study (LLaMA-7B, Model Zoo settings) against +34.3%. "
    "The model gets the study's other variants in order but at about twice their size (tiling_accum fp32 "
    "x0.65, weight_grad_reduce fp32 x0.83, both with fp32 ops x0.52 as fp32 ops alone; the notebook: x0.85, "
    "x0.88, x0.73, x0.74): in the model GEMM arithmetic is ~90% of the step, while every one of the "
    "study's ratios puts it near 35% (docs/perfmodel.md, SN30 RDU, What remains off)",
)
def test_rdu_mixed_precision_gain_is_the_papers_size():
    """Paper: +34.3%, the artifact's LLaMA study (sambaNova/mixed_precision.ipynb, mix over close_mix)
    at Model Zoo's settings; within a third (23-46%)."""
    mixed, fp32 = (registry.throughput(rdu_mixed_precision_run(p)) for p in ("mixed", "fp32"))
    assert 1.23 <= mixed / fp32 <= 1.46


def matched_pair(half_partials: bool):
    """The artifact's matched pair: run_benchmark.sh (--enable-half-partials True) against
    run_benchmark_100eocphs.sh (False), both GPT-2 small at "0 4 4 4" with train_gpt2.py's default
    --optimizer-state-offchip True (Graphcore's GPT-2 config.json vocabulary, 50,272)."""
    return run_config(
        "ipu",
        model="gpt2_small",
        precision="fp16",
        parallel="pp",
        placement="0 4 4 4",
        batch_size=1,
        grad_accum=2048,
        options={
            **PAPER_IPU,
            "optimizer_state_offchip": True,
            "replicated_tensor_sharding": True,
            "half_partials": half_partials,
        },
        model_over={"tie_embeddings": True, "vocab_size": 50272},
    )


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced: half partials give x1.65 on the matched pair (364 vs 221 samples/s). poplibs "
    "doubles the AMP vertex cycles with fp32 partials (half the conv units, the same 4-cycle core loop), so "
    "the gain is at least 1 + the half stage's AMP share (54%); +22% needs it at most 29%, below the 43% it has "
    "even at the AMP's full peak (+57%); see docs/perfmodel.md",
)
def test_ipu_mixed_precision_gain_is_the_papers_size():
    """Paper: +22.0%; within a third: 14.7-29.3%. Its Graphcore scripts cast every model ``.half()``
    (paper-notes 4.2), so its IPU precision comparison is fp16 with fp32 partials (FP16.32) against fp16
    with half partials (FP16.16), on the same placements."""
    gain = throughput(matched_pair(True)) / throughput(matched_pair(False))
    assert 1.147 <= gain <= 1.293


def test_ipu_fp32_against_16_bit_is_far_more_than_the_papers_comparison():
    """True fp32 (87.5 TFLOP/s, 4-byte operands) against mixed is physics, not the paper's comparison:
    a quarter of the FP16.16 AMP rate (half of FP16.32) and twice the bytes, so the 16-bit run wins by
    much more than the partials type alone does (less than the 4x of the AMP rate: exchange, at twice the
    bytes, is a large part of the step)."""
    fp32 = throughput(ipu("0 4 4 4", precision="fp32"))
    half_partials = throughput(ipu("0 4 4 4", precision="mixed", half_partials=True))
    float_partials = throughput(ipu("0 4 4 4", precision="mixed", half_partials=False))
    assert half_partials / fp32 > 2.0
    assert float_partials / fp32 > 1.5
    assert half_partials / fp32 > (half_partials / float_partials) * 1.5


#: finding id (dabench/findings/registry.py) -> the tests here that check it (tests/findings/test_table.py
#: holds them to the finding's computed status)
CHECKS: dict[str, tuple[str, ...]] = {
    "wse2-allocation": ("test_wse2_allocation_saturates_in_the_90s_as_the_sweep_deepens",),
    "wse2-balance": ("test_wse2_balances_near_perfectly",),
    "wse2-72-layers": (
        "test_wse2_pipelined_fails_beyond_the_papers_72_layers_with_the_reason",
        "test_wse2_fails_on_capacity_as_layers_grow",
    ),
    "wse2-compile-reports": ("test_wse2_reproduces_the_fixture_compile_reports",),
    "wse2-batch-plateau": (
        "test_wse2_samples_per_s_is_flat_beyond_batch_200",
        "test_batch_size_near_linear_on_rdu_and_ipu_and_flattening_on_wse2",
    ),
    "wse2-mixed-precision": ("test_wse2_mixed_precision_gain_is_the_papers_size",),
    "rdu-allocation": ("test_rdu_allocation_stays_at_most_about_60_percent",),
    "rdu-o3-allocation": ("test_rdu_o3_allocation_at_most_about_60_percent",),
    "rdu-o3-balance": ("test_rdu_o3_balance_worsens_as_layers_grow",),
    "rdu-memory-bound": ("test_rdu_is_memory_bound_on_its_ddr",),
    "rdu-tensor-parallel": (
        "test_rdu_tensor_parallel_two_to_four_chips_loses_30_to_50_percent",
        "test_rdu_tensor_parallelism_across_machines_loses_throughput",
    ),
    "rdu-batch": ("test_batch_size_near_linear_on_rdu_and_ipu_and_flattening_on_wse2",),
    "rdu-mixed-precision": (
        "test_rdu_mixed_precision_gain_is_the_papers_size",
        "test_mixed_precision_helps_rdu_and_ipu_far_more_than_wse2",
    ),
    "ipu-compute-efficiency": ("test_ipu_compute_efficiency_is_at_most_about_41_percent",),
    "ipu-memory-bound": ("test_ipu_is_memory_bound",),
    "ipu-mixed-precision": ("test_ipu_mixed_precision_gain_is_the_papers_size",),
    "ipu-capacity": ("test_ipu_capacity_fails_for_ten_layers_on_two_ipus",),
    "ipu-most-loaded": (
        "test_ipu_throughput_is_set_by_the_most_loaded_ipu",
        "test_ipu_minimising_the_maximum_layers_per_ipu_wins",
    ),
    "ipu-tile-use": ("test_ipu_over_provisioning_leaves_tiles_idle",),
    "ipu-batch": ("test_ipu_batch_size_gain_is_near_linear",),
}
