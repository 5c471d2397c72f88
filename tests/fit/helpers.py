"""Synthetic measured runs for the fit-from-runs tests (docs/fitting.md).

NOT measurements: each "measured" throughput is the analytical model's prediction with
PERTURBED constants (``truth``), times a deterministic noise factor, priced at fixed ceilings that
the run records. They stand in for measured runs so that the tests know the answer a fit should
move towards; they are written through dabench's own run lifecycle
(:func:`dabench.tracking.lifecycle.recorded_run`) into a temp SQLite store (real MLflow), with the
tags and params a measured run carries.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

from dabench.config.build import build_run_config, flatten
from dabench.core.ceilings import Ceilings
from dabench.perfmodel import get_predictor
from dabench.perfmodel.fit.sources import hardware_yaml
from dabench.workload.opgraph import build_opgraph

FIXTURES = Path(__file__).with_name("fixtures")
#: ceilings the synthetic CPU runs record (per precision: an emulated bf16 GEMM is slower)
CPU_CEILINGS = {"fp32": (5e10, 1e10), "bf16": (2e10, 1e10)}
#: "the machine" behind the synthetic CPU runs: slower dispatch, slower streaming, and a slow
#: emulated bf16 (what this repository's CPU shows)
CPU_TRUTH = {
    "launch_s": 1.6e-4,
    "memory_efficiency": 0.3,
    "emulated_compute_efficiency": 0.35,
    "emulated_memory_efficiency": 0.3,
}
CPU_HOST = "cpu:Synthetic CPU (test fixture)"


_BASE: dict[tuple, dict[str, Any]] = {}


def container(arch: str, layers: int, hidden: int, batch: int, precision: str, model: str = "tiny") -> dict[str, Any]:
    """The config mapping of one run (conf/ groups, as a composed run has them; composed once per
    platform, model and precision)."""
    import copy

    from tests.conftest import composed

    key = (arch, precision, model)
    if key not in _BASE:
        _BASE[key] = composed([f"hardware={arch}", f"precision={precision}", f"model={model}", "hardware.mode=measure"])
    cfg = copy.deepcopy(_BASE[key])
    cfg["model"].update(n_layers=layers, hidden_size=hidden)
    cfg["run"]["batch_size"] = batch
    return cfg


def noise(i: int, amplitude: float) -> float:
    """A deterministic multiplicative noise factor in [1 - amplitude, 1 + amplitude]."""
    return 1.0 + amplitude * math.sin(1.7 * i + 0.3)


def predicted_samples(cfg: dict[str, Any], options: dict[str, Any], ceilings: tuple[float, float]) -> float:
    rc = build_run_config({**cfg, "tracking": {"enabled": False}})
    rc = replace(rc, hardware=replace(rc.hardware, options={**rc.hardware.options, **options}))
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    return get_predictor(rc.hardware.arch)(rc, graph, Ceilings(ceilings[0], ceilings[1], "dram", "test")).samples_per_s


def synthetic_run(
    i: int,
    arch: str,
    cfg: dict[str, Any],
    samples: float,
    ceilings: tuple[float, float],
    host: str,
    status: str = "ok",
    mode: str = "measure",
) -> dict[str, Any]:
    """One run as ``{run_id, tags, params, metrics}`` (what dabench fit --from-mlflow reads)."""
    batch, seq = cfg["run"]["batch_size"], cfg["model"]["seq_len"]
    step = batch / samples
    native = cfg["precision"]["compute_dtype"] == "fp32" or arch != "cpu"
    tags = {
        "dabench.mode": mode,
        "dabench.status": status,
        "dabench.arch": arch,
        "dabench.hardware": arch,
        "dabench.backend": arch,
        "dabench.model": cfg["model"]["name"],
        "dabench.core.profile.precision_native": "true" if native else "false",
    }
    if mode == "measure":
        tags["dabench.host_key"] = host
    if status != "ok":
        tags["dabench.reason"] = "the result check failed: throughput above the roof (synthetic)"
    metrics = {
        "throughput.samples_per_s": samples,
        "throughput.tokens_per_s": samples * seq,
        "step_time.median_s": step,
        "step_time.p10_s": step * 0.97,
        "step_time.p90_s": step * 1.03,
        "perf.peak_tflops": ceilings[0] / 1e12,
        "roofline.ridge_intensity": ceilings[0] / ceilings[1],
        "tier1.bandwidth_efficiency.dram": 0.1,
    }
    params = {k: str(v) for k, v in flatten(cfg).items()}
    return {"run_id": f"{i:032x}", "tags": tags, "params": params, "metrics": metrics}


def cpu_grid(layers=(2, 4, 8), hidden=(128, 256), batch=(1, 4), precisions=("fp32", "bf16")) -> list[tuple]:
    return [(L, H, B, P) for P in precisions for L in layers for H in hidden for B in batch]


def cpu_runs(
    grid: Iterable[tuple],
    truth: dict[str, Any] | None = None,
    amplitude: float = 0.03,
    start: int = 1,
    host: str = CPU_HOST,
    scale: float = 1.0,
) -> list[dict[str, Any]]:
    """Synthetic measured CPU runs of ``grid`` ((layers, hidden, batch, precision) each)."""
    truth = CPU_TRUTH if truth is None else truth
    shipped = hardware_yaml("cpu")["options"]
    out = []
    for i, (L, H, B, P) in enumerate(grid, start):
        cfg = container("cpu", L, H, B, P)
        ceilings = CPU_CEILINGS[P]
        samples = predicted_samples(cfg, {**shipped, **truth}, ceilings) * noise(i, amplitude) * scale
        out.append(synthetic_run(i, "cpu", cfg, samples, ceilings, host))
    return out


def record(uri: str, runs: Iterable[dict[str, Any]], experiment: str) -> list[str]:
    """Write ``runs`` through dabench's run lifecycle into the store at ``uri``; their run ids."""
    from dabench.core.status import Status
    from dabench.tracking.lifecycle import recorded_run

    ids = []
    for run in runs:
        tags = {k: v for k, v in run["tags"].items() if k != "dabench.status"}
        with recorded_run(experiment=experiment, uri=uri, run_name=f"synthetic {run['run_id'][-4:]}", tags=tags) as rec:
            rec.log(params=run["params"], metrics=run["metrics"])
            rec.set_status(Status(run["tags"].get("dabench.status", "ok")), run["tags"].get("dabench.reason", ""))
        ids.append(rec.run_id)
    return ids


def load_fixture(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())["runs"]


#: "the GPU" behind the CUDA fixture: GEMMs and streaming kernels below the shipped estimates
CUDA_TRUTH = {"compute_efficiency": 0.45, "memory_efficiency": 0.6, "launch_s": 1.2e-5}
CUDA_HOST = "cuda:NVIDIA H200"
CUDA_GRID = [
    ("tiny", 2, 256, 8, "fp32"),
    ("tiny", 4, 512, 16, "fp32"),
    ("tiny", 8, 256, 32, "bf16"),
    ("tiny", 2, 1024, 8, "bf16"),
    ("gpt2_small", 12, 768, 4, "bf16"),
    ("gpt2_small", 12, 768, 8, "fp32"),
    ("gpt2_small", 6, 768, 16, "bf16"),
    ("gpt2_small", 12, 768, 16, "mixed"),
    ("tiny", 4, 2048, 4, "bf16"),
    ("gpt2_small", 4, 1536, 8, "fp32"),
]


def make_cuda_fixture(path: Path = FIXTURES / "cuda_runs.json") -> Path:
    """Write the CUDA fixture (run once by hand: ``python -c 'from tests.fit.helpers import
    make_cuda_fixture; make_cuda_fixture()'``). No GPU was available when it was made: its runs
    are the H200 model's predictions with :data:`CUDA_TRUTH` (+-4% noise), at the spec ceilings
    (the same a measured cuda run records), stamped as measured runs of host :data:`CUDA_HOST`."""
    from dabench.host.ceilings import resolve_ceilings

    shipped = hardware_yaml("cuda")["options"]
    runs = []
    for i, (model, L, H, B, P) in enumerate(CUDA_GRID, 1):
        cfg = container("cuda", L, H, B, P, model)
        rc = build_run_config({**cfg, "tracking": {"enabled": False}})
        roof = resolve_ceilings(rc.hardware, rc.precision)
        ceilings = (roof.peak_flops, roof.bandwidth_Bps)
        samples = predicted_samples(cfg, {**shipped, **CUDA_TRUTH}, ceilings) * noise(i, 0.04)
        runs.append(synthetic_run(1000 + i, "cuda", cfg, samples, ceilings, CUDA_HOST))
    path.write_text(
        json.dumps(
            {
                "note": "SYNTHETIC stand-ins for measured CUDA runs (tests/fit/helpers.py: "
                "make_cuda_fixture): the H200 model with perturbed constants, not a GPU's "
                "measurements; never a source of shipped constants",
                "runs": runs,
            },
            indent=1,
        )
    )
    return path
