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
from typing import Any, Callable, Iterable, Mapping

from dabench.config.build import build_run_config, flatten
from dabench.core.ceilings import Ceilings
from dabench.fit.sources import hardware_yaml
from dabench.perfmodel import get_predictor
from dabench.perfmodel.constants import FORMAT as CONSTANT_SET_FORMAT
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
#: the host key dabench's recording code writes for a cuda run where torch sees no GPU (the
#: stand-ins were recorded on a machine without one; a real H200 run writes "cuda:NVIDIA H200")
CUDA_HOST = "cuda:cuda"
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


#: what the stand-in runs say they are (tag dabench.source, from their Profile.source)
STANDIN_SOURCE = "recorded-standin:perfmodel.cuda (not measured)"
#: tags that name the machine and process that wrote the fixture (left out of the committed file)
_OWNER_TAGS = ("dabench.host", "dabench.pid", "dabench.process_start", "dabench.process_key")


def standin_backend(factor: Callable[[], float]) -> type:
    """A Backend class that stands in for the cuda backend on a machine without a GPU: its
    "measured" Profile is the H200 model's prediction with :data:`CUDA_TRUTH` over the shipped
    knobs, step time divided by ``factor()`` (noise), source :data:`STANDIN_SOURCE`. Everything
    around it (execute, the metrics, the result check, run_record, the store) is dabench's own."""
    from dabench.backends import Availability, Backend
    from dabench.core.profile import Profile

    class StandInCuda(Backend):
        name = "cuda"

        @classmethod
        def availability(cls, rc) -> Availability:
            return Availability(True)

        def run(self, rc, graph, on_timed_window=None) -> Profile:
            from dabench.host.ceilings import resolve_ceilings

            hw = replace(rc.hardware, mode="predict", options={**rc.hardware.options, **CUDA_TRUTH})
            truth = get_predictor("cuda")(replace(rc, hardware=hw), graph, resolve_ceilings(rc.hardware, rc.precision))
            step = truth.median_step_s / factor()
            return replace(
                truth,
                mode="measure",
                source=STANDIN_SOURCE,
                step_times_s=[step * 0.98, step, step * 1.02],
                extra_metrics={},  # the model's own terms: no measured run has them
                tags={},
            )

    return StandInCuda


def record_standin_cuda_runs(uri: str, grid=None, experiment: str = "cuda_standin") -> list[str]:
    """Record stand-in CUDA runs of ``grid`` into the store at ``uri`` through dabench's own
    measured-run path (compose -> pipeline.job.prepare -> pipeline.record.record_run -> execute ->
    run_record -> the run lifecycle), the cuda backend replaced by :func:`standin_backend`; their
    run ids. The only thing not real is the device."""
    from unittest import mock

    from dabench.config.compose import compose
    from dabench.pipeline import execute as execute_module
    from dabench.pipeline.job import prepare
    from dabench.pipeline.record import record_run

    ids = []
    for i, (model, L, H, B, P) in enumerate(grid or CUDA_GRID, 1):
        backend = standin_backend(lambda i=i: noise(i, 0.04))
        overrides = [
            "hardware=cuda",
            "hardware.mode=measure",
            f"model={model}",
            f"model.n_layers={L}",
            f"model.hidden_size={H}",
            f"run.batch_size={B}",
            f"precision={P}",
            "run.plots=never",
            f"tracking.uri={uri}",
            f"tracking.experiment={experiment}",
            "tracking.system_metrics_interval_s=0",
        ]
        with mock.patch.object(execute_module, "get_backend", lambda name, b=backend: b):
            result, run_id = record_run(prepare(compose(overrides)), name=f"stand-in cuda {i}")
        assert result.ok and run_id, result.reason
        ids.append(run_id)
    return ids


def read_runs(uri: str, ids: Iterable[str]) -> list[dict[str, Any]]:
    """The runs ``ids`` of the store as ``{run_id, tags, params, metrics}`` (MLflow's run data),
    without MLflow's own tags and the writing machine's owner tags."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    out = []
    for run_id in ids:
        run = client.get_run(run_id)
        tags = {k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.") and k not in _OWNER_TAGS}
        out.append({"run_id": run_id, "tags": tags, "params": dict(run.data.params), "metrics": dict(run.data.metrics)})
    return out


def make_cuda_fixture(path: Path = FIXTURES / "cuda_runs.json") -> Path:
    """Write the CUDA fixture (run by hand: ``python -c 'from tests.fit.helpers import
    make_cuda_fixture; make_cuda_fixture()'``): :func:`record_standin_cuda_runs` into a temp store,
    read back. RECORDED STAND-INS, NOT MEASUREMENTS: no GPU was available; each run is the H200
    model with :data:`CUDA_TRUTH` (+-4% noise), recorded by dabench's measured-run code as a
    measured hardware=cuda run (its host key is what that code writes without a visible GPU)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{Path(tmp) / 'store.db'}"
        runs = read_runs(uri, record_standin_cuda_runs(uri))
    path.write_text(
        json.dumps(
            {
                "note": "RECORDED STAND-INS for measured CUDA runs, NOT measurements: no GPU was available. "
                "Each run is the H200 model's prediction with perturbed constants (tests/fit/helpers.py: "
                "CUDA_TRUTH, standin_backend), recorded by dabench's own measured-run path (record_run -> "
                "execute -> run_record) with the cuda backend replaced by the stand-in; tag dabench.source "
                "says so on every run. Never a source of shipped constants.",
                "standin": True,
                "runs": runs,
            },
            indent=1,
            sort_keys=True,
        )
    )
    return path


def format_problems(data: Mapping[str, Any]) -> list[str]:
    """Everything that breaks the documented format (empty when the set is well formed)."""
    found = []
    for key in (
        "format",
        "format_version",
        "name",
        "created",
        "dabench_version",
        "nominal_coverage",
        "platforms",
        "cv",
    ):
        if key not in data:
            found.append(f"missing {key}")
    if data.get("format") != CONSTANT_SET_FORMAT:
        found.append(f"format is {data.get('format')!r}, not {CONSTANT_SET_FORMAT!r}")
    for arch, entry in (data.get("platforms") or {}).items():
        for key in ("model_hash", "constants", "band", "calibration_points", "fitted_constants"):
            if key not in entry:
                found.append(f"{arch}: missing {key}")
        for path, c in (entry.get("constants") or {}).items():
            if c.get("kind") not in ("source", "uncertain", "fitted", "setting"):
                found.append(f"{arch}: {path}: kind {c.get('kind')!r}")
            if c.get("kind") == "fitted" and not (c.get("bounds") and c.get("points")):
                found.append(f"{arch}: {path}: fitted without bounds and points")
            if c.get("kind") == "source" and not (c.get("document") and c.get("locator")):
                found.append(f"{arch}: {path}: source without document and locator")
        kind = (entry.get("band") or {}).get("kind")
        if kind not in ("near", "conformal", "wide", "uncalibrated", "unbounded"):
            found.append(f"{arch}: band kind {kind!r}")
        if kind in ("near", "conformal") and not entry.get("residuals"):
            found.append(f"{arch}: a {kind} band without residuals")
    return found
