"""Every analytical model: a Profile marked predicted, Tier-2 figures for parallel runs, refusals
that name what is unsupported, and no torch import on the predict path."""

import math
import subprocess
import sys

import pytest

from dabench.core.status import CompileError, ConfigError, UnsupportedError
from tests.conftest import ROOT
from tests.perfmodel.helpers import predict, run_config

HEADLINE = {"wse2": "pes", "rdu": "pcus", "ipu": "tiles"}
#: the paper's Graphcore settings (matmul proportion 0.15, embedding serialization 4); with
#: PopTorch's defaults (0.6, 1) the vocabulary-sized head does not fit IPU 0 in this model
PAPER_IPU = {"available_memory_proportion": 0.15, "embedding_serialization_factor": 4}


@pytest.mark.parametrize(
    "arch,kind,kwargs",
    [
        ("wse2", "kernel", {}),
        ("rdu", "section_stage", {"batch_size": 16}),
        (
            "ipu",
            "stage",
            {
                "model": "gpt2_test",
                "precision": "fp16",
                "parallel": "pp",
                "placement": "0 4 4 4",
                "batch_size": 1,
                "grad_accum": 64,
                "options": PAPER_IPU,
            },
        ),
    ],
)
def test_dataflow_models_return_a_predicted_profile(arch, kind, kwargs):
    rc = run_config(arch, **kwargs)
    profile, metrics = predict(rc)
    assert profile.mode == "predict" and profile.source == f"perfmodel.{arch}"
    assert profile.samples_per_step == rc.samples_per_step and profile.chips == rc.parallel.n_chips
    assert next(iter(profile.units)) == HEADLINE[arch]
    assert profile.tags["subtask_kind"] == kind and profile.subtasks and profile.memory_bytes
    assert 0 < metrics["tier1.allocation_ratio"] <= 1 and 0 < metrics["tier1.load_imbalance"] <= 1
    assert 0 < metrics["tier1.compute_efficiency"] < 1
    assert metrics["throughput.samples_per_s"] == pytest.approx(rc.samples_per_step / profile.step_times_s[0])


@pytest.mark.parametrize(
    "arch,kwargs,strategies",
    [
        (
            "ipu",
            {
                "model": "gpt2_test",
                "precision": "fp16",
                "parallel": "pp",
                "placement": "0 2 1 1",
                "replicas": 2,
                "batch_size": 1,
                "grad_accum": 16,
                "options": PAPER_IPU,
            },
            {"pp", "dp"},
        ),
        ("rdu", {"parallel": "tp", "degree": 2, "batch_size": 8}, {"tp"}),
        ("rdu", {"parallel": "dp", "degree": 4, "batch_size": 8}, {"dp"}),
        (
            "wse2",
            {"parallel": "dp", "degree": 2, "batch_size": 64, "options": {"execution_mode": "weight_streaming"}},
            {"dp"},
        ),
        ("cuda", {"parallel": "pp", "degree": 2, "precision": "bf16", "batch_size": 8}, {"pp"}),
        ("cuda", {"parallel": "tp", "degree": 4, "precision": "bf16", "batch_size": 8}, {"tp"}),
        ("cuda", {"parallel": "dp", "degree": 8, "precision": "bf16", "batch_size": 8}, {"dp"}),
    ],
)
def test_every_parallel_run_has_tier2(arch, kwargs, strategies):
    rc = run_config(arch, **kwargs)
    profile, metrics = predict(rc)
    assert rc.parallel.n_chips > 1
    assert 0 < metrics["tier2.scaling_efficiency"] <= 1.0 + 1e-9
    assert 0 <= metrics["tier2.comm_fraction"] < 1
    assert {key.rsplit(".", 1)[1] for key in metrics if key.startswith("tier2.comm_time_s.")} == strategies
    if "pp" in strategies:
        assert metrics["tier2.bubble_time_s"] > 0


def test_cpu_roofline_uses_the_given_ceilings():
    spec = {"peak_flops": {"fp32": 1e11}, "memory": [{"name": "dram", "capacity_bytes": 1e10, "bandwidth_Bps": 1e10}]}
    slow = run_config("cpu", model="tiny", precision="fp32", hw=spec)
    fast = run_config(
        "cpu",
        model="tiny",
        precision="fp32",
        hw={**spec, "peak_flops": {"fp32": 1e12}, "memory": [{**spec["memory"][0], "bandwidth_Bps": 1e11}]},
    )
    (p_slow, m_slow), (_, m_fast) = predict(slow), predict(fast)
    assert p_slow.tags["ceilings"] == "spec" and p_slow.class_times_s["matmul"] > 0
    assert m_fast["throughput.samples_per_s"] > m_slow["throughput.samples_per_s"]


def test_a_cpu_prediction_that_does_not_fit_this_machines_ram_is_capacity():
    """The CPU's RAM (its spec's, else MemTotal) holds every rank's weights, state and activations."""
    from dabench.core.status import CapacityError
    from dabench.host.info import meminfo_bytes

    def ram(capacity):
        return {
            "peak_flops": {"fp32": 1e11},
            "memory": [{"name": "dram", "capacity_bytes": capacity, "bandwidth_Bps": 1e10}],
        }

    with pytest.raises(CapacityError, match="this machine's, 1 rank") as refused:
        predict(run_config("cpu", precision="fp32", hw=ram(None), model_over={"n_layers": 5000}))
    assert refused.value.available_bytes == meminfo_bytes("MemTotal")
    with pytest.raises(CapacityError) as sized:
        predict(run_config("cpu", precision="fp32", hw=ram(1.0)))
    one_rank = sized.value.needed_bytes
    predict(run_config("cpu", precision="fp32", hw=ram(1.5 * one_rank)))  # fits
    with pytest.raises(CapacityError, match="2 rank"):  # two ranks of the same share it
        predict(run_config("cpu", precision="fp32", parallel="dp", hw=ram(1.5 * one_rank), degree=2))


def test_ipu_refuses_bf16_and_maps_mixed_to_16_bit():
    with pytest.raises(ConfigError) as info:
        run_config("ipu", model="gpt2_test", precision="bf16")
    assert info.value.field == "precision"
    rc = run_config(
        "ipu",
        model="gpt2_test",
        precision="mixed",
        parallel="pp",
        placement="0 4",
        batch_size=1,
        grad_accum=16,
        options={"available_memory_proportion": 0.15, "embedding_serialization_factor": 4},
    )
    profile, _ = predict(rc)
    assert rc.precision.compute_bytes == 2 and profile.extra_metrics["ipu.max_memory_fraction"] < 1


def test_ipu_pipeline_needs_enough_micro_batches():
    rc = run_config(
        "ipu", model="gpt2_test", precision="fp16", parallel="pp", placement="0 2 1 1", batch_size=1, grad_accum=4
    )
    with pytest.raises(CompileError, match="grad_accum >= 7"):
        predict(rc)


@pytest.mark.parametrize(
    "arch,kwargs,match",
    [
        ("wse2", {"parallel": "tp", "degree": 2}, "parallel=tp"),
        ("wse2", {"parallel": "dp", "degree": 2}, "one CS-2"),
        ("rdu", {"parallel": "pp", "degree": 2}, "parallel=pp"),
        ("ipu", {"model": "gpt2_test", "parallel": "tp", "degree": 2}, "parallel=tp"),
    ],
)
def test_unmodelled_layouts_are_unsupported_with_a_reason(arch, kwargs, match):
    with pytest.raises(UnsupportedError, match=match):
        predict(run_config(arch, **kwargs))


def test_wse2_auto_mode_falls_back_to_weight_streaming():
    big = {"model_over": {"n_layers": 96}, "batch_size": 64}
    profile, _ = predict(run_config("wse2", options={"execution_mode": "auto"}, **big))
    assert profile.tags["execution_mode"] == "weight_streaming" and "memoryx" in profile.memory_bytes


def test_wse2_replicates_small_models_only_when_asked():
    """The compile reports place one copy of a small model (37% Active PEs), so replicas default to
    1; replicas=auto copies it across the region (intra-chip data parallelism) when that is faster."""
    small = {"model_over": {"hidden_size": 192, "n_layers": 2, "seq_len": 128}, "batch_size": 112}
    one, one_metrics = predict(run_config("wse2", **small))
    assert one.extra_metrics["wse2.replicas"] == 1
    profile, metrics = predict(run_config("wse2", options={"replicas": "auto"}, **small))
    assert profile.extra_metrics["wse2.replicas"] > 1 and metrics["tier2.comm_time_s.dp"] > 0
    assert metrics["throughput.samples_per_s"] > one_metrics["throughput.samples_per_s"]
    assert metrics["tier1.allocation_ratio"] > one_metrics["tier1.allocation_ratio"]


def test_bad_model_knobs_are_config_errors():
    with pytest.raises(ConfigError) as info:
        predict(run_config("rdu", options={"compile_mode": "o2"}))
    assert info.value.field == "hardware.options.compile_mode"
    with pytest.raises(ConfigError) as info:
        predict(run_config("ipu", model="gpt2_test", precision="fp16", options={"amp_efficiency": 1.5}))
    assert info.value.field == "hardware.options.amp_efficiency"


def test_the_predict_path_never_imports_torch():
    code = (
        "import sys\n"
        "from tests.perfmodel.helpers import predict, run_config\n"
        "predict(run_config('wse2'))\n"
        "predict(run_config('rdu', batch_size=8))\n"
        "predict(run_config('ipu', model='tiny', precision='fp16'))\n"
        "predict(run_config('cuda', precision='bf16'))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


# ----------------------------------------------------------------------------- tied LM head


def _tied_and_untied(arch: str, **kw):
    """(RunConfig, op graph) of gpt2_small with and without ``tie_embeddings``."""
    from dabench.workload.opgraph import build_opgraph

    out = []
    for tie in (True, False):
        rc = run_config(arch, model_over={**kw.pop("model_over", {}), "tie_embeddings": tie}, **kw)
        out.append((rc, build_opgraph(rc.model, rc.run.batch_size, rc.precision)))
    return out


def test_gpt2_configs_tie_the_lm_head_as_gpt2_does():
    """GPT-2 small has 124,439,808 parameters with the head tied (Hugging Face GPT2LMHeadModel);
    an untied head adds the 50,257 x 768 table again."""
    (_, tied), (_, untied) = _tied_and_untied("rdu")
    assert tied.model.tie_embeddings and tied.params == 124_439_808
    assert untied.params - tied.params == 50257 * 768


def test_rdu_tied_head_section_still_holds_the_table():
    """A tied head owns no parameters (the embedding does), but the section that runs it still holds
    the table in its PMUs (backward: and the gradient accumulator) and moves it over DDR: forward and
    backward sections are the untied model's. Only the update is shared: one AdamW over the table."""
    from dabench.platforms.rdu import model as rdu

    plans = []
    for rc, graph in _tied_and_untied("rdu", batch_size=16, options={"compile_mode": "o3"}):
        k = rdu.knobs(rc)
        plans.append((k, rdu.sections(graph, k, 1), graph))
    (k, tied, tied_graph), (_, untied, untied_graph) = plans
    for phase in ("fwd", "bwd"):
        assert [[(s.name, s.weight_pmus, s.ddr_fused) for s in sec.stages] for sec in tied[phase]] == [
            [(s.name, s.weight_pmus, s.ddr_fused) for s in sec.stages] for sec in untied[phase]
        ]
    head = next(s for sec in tied["fwd"] for s in sec.stages if s.name == "head.lm_head.fwd")
    assert head.weight_pmus == math.ceil(50257 * 768 * 4 / k.pmu_bytes)
    table_update = 12.0 * 50257 * 768  # AdamW FLOPs of one table
    opt = [sum(s.flops for sec in plan["opt"] for s in sec.stages) for plan in (tied, untied)]
    assert opt[1] - opt[0] == pytest.approx(table_update)
    assert untied_graph.params - tied_graph.params == 50257 * 768


def test_wse2_weight_streaming_streams_a_tied_table_for_the_head():
    """MemoryX keeps one copy of a tied table, but the head layer streams it in (and its gradient
    out) as the embedding layer does: per layer, tied and untied runs take the same time. At 2 x 1,024
    tokens the head's matmul is shorter than streaming the table in (~1.2 PFLOP/s vs 150 GB/s)."""
    kw = {"batch_size": 2, "options": {"execution_mode": "weight_streaming"}}
    times = [{s.name: s.time_s for s in predict(rc)[0].subtasks} for rc, _ in _tied_and_untied("wse2", **kw)]
    assert times[0] == pytest.approx(times[1])
    from dabench.platforms.wse.model import streamed_params

    (_, tied), _ = _tied_and_untied("wse2")
    assert tied.layer("head").params < 50257 * 768 <= streamed_params(tied.layer("head"), tied.model)


def test_ipu_zero_stores_a_tied_table_once():
    """IPU 0 holds the embedding and the head: a tied table (its weights, gradient and optimizer
    state) counts once there."""
    from dabench.platforms.ipu.model import ipu_params

    kw = {
        "model": "gpt2_test",
        "precision": "fp16",
        "parallel": "pp",
        "placement": "0 4 4 4",
        "batch_size": 1,
        "grad_accum": 64,
        "options": PAPER_IPU,
    }
    (rc, tied), (_, untied) = _tied_and_untied("ipu", **kw)
    layers = tuple(rc.parallel.layers_per_stage)
    table = rc.model.vocab_size * rc.model.hidden_size
    assert ipu_params(untied, layers)[0] - ipu_params(tied, layers)[0] == table
    assert ipu_params(untied, layers)[1:] == ipu_params(tied, layers)[1:]
