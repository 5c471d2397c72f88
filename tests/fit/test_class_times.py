"""Per-class times in the fit (docs/fitting.md, "The fit"): a run that profiled its op classes
contributes one residual per class, and on injected runs a fit with them recovers known
efficiencies better than one from throughput alone.

The runs are SYNTHETIC (tests/fit/helpers.py): the CPU model's predictions with known constants
(:data:`TRUTH`), throughput and each class time with their own deterministic noise, the class
times also 30% slow as a profiler makes them (the fit uses their mix, not their sum).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from dabench.cli.fit.from_mlflow import report
from dabench.core.ceilings import Ceilings
from dabench.core.platforms import platform
from dabench.fit.constant_set import build_set
from dabench.fit.evaluate import base_options, prepare, quiet_model
from dabench.fit.machine import fit_group
from dabench.fit.refit import class_residuals, measured_classes, refit_runs, run_residuals
from dabench.fit.runs import points_from_runs
from dabench.fit.sources import hardware_yaml
from dabench.perfmodel import get_predictor
from tests.fit import helpers as h

TRUTH = {"compute_efficiency": 0.45, "memory_efficiency": 0.25, "launch_s": 4e-5}
BOUNDS = {k: platform("cpu").fit_bounds[k] for k in TRUTH}
GRID = [(2, 128, 1, "fp32"), (8, 256, 4, "fp32"), (4, 128, 4, "fp32"), (2, 256, 1, "fp32")]
PROFILER_SLOWDOWN = 1.3


def _runs(amplitude: float = 0.06) -> list[dict]:
    """Synthetic measured CPU runs of GRID with class_time.* metrics (what a profiled run carries)."""
    from dabench.config.build import build_run_config
    from dabench.workload.opgraph import build_opgraph

    options = {**hardware_yaml("cpu")["options"], **TRUTH}
    ceilings = h.CPU_CEILINGS["fp32"]
    out = []
    for i, (L, H, B, P) in enumerate(GRID, 1):
        cfg = h.container("cpu", L, H, B, P)
        rc = build_run_config({**cfg, "tracking": {"enabled": False}})
        rc = replace(rc, hardware=replace(rc.hardware, options={**rc.hardware.options, **options}))
        graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
        truth = get_predictor("cpu")(rc, graph, Ceilings(ceilings[0], ceilings[1], "dram", "test"))
        run = h.synthetic_run(i, "cpu", cfg, truth.samples_per_s * h.noise(i, amplitude), ceilings, h.CPU_HOST)
        for j, (cls, seconds) in enumerate(sorted(truth.class_times_s.items())):
            run["metrics"][f"class_time.{cls}"] = seconds * PROFILER_SLOWDOWN * h.noise(7 * i + j, amplitude)
        run["metrics"]["class_time.other"] = 0.05 * sum(truth.class_times_s.values())
        out.append(run)
    return out


EFFICIENCIES = ("compute_efficiency", "memory_efficiency")


def _miss(fitted: dict[str, float]) -> float:
    """The largest |log(fitted / true)| over the efficiencies (launch_s is fitted too, but these
    configs' steps barely depend on it: neither fit pins it within 30%)."""
    return max(abs(math.log(fitted[k] / TRUTH[k])) for k in EFFICIENCIES)


def test_class_times_are_rescaled_to_the_timed_step_and_become_residuals():
    runs = _runs()
    points, _ = points_from_runs(runs)
    p = points[0]
    classes = measured_classes(p)
    logged = {k.split(".", 1)[1]: v for k, v in runs[0]["metrics"].items() if k.startswith("class_time.")}
    share = 1 - logged["other"] / sum(logged.values())
    assert "other" not in classes and set(classes) <= {
        "matmul",
        "attention",
        "norm",
        "elementwise",
        "embedding",
        "loss",
        "optimizer",
    }
    assert sum(classes.values()) == pytest.approx(p.step_s * share, rel=1e-9)  # the mix, on the timed step
    exact = {c: s for c, s in classes.items()}
    assert class_residuals(p, exact) == pytest.approx([0.0] * len(classes))
    doubled = class_residuals(p, {c: 2 * s for c, s in classes.items()})
    assert sum(r * r for r in doubled) == pytest.approx(math.log(2) ** 2)  # together they weigh as one residual
    assert not prepare(points[:1])[1]
    assert len(run_residuals(points[:1], base_options("cpu"))) == 1 + len(classes)
    assert len(run_residuals(points[:1], base_options("cpu"), classes=False)) == 1


def test_a_fit_with_class_times_recovers_known_efficiencies_better_than_throughput_alone():
    points, _ = points_from_runs(_runs())
    assert not prepare(points)[1]
    start = base_options("cpu")
    with quiet_model():
        alone = refit_runs(points, BOUNDS, start, classes=False)
        both = refit_runs(points, BOUNDS, start, classes=True)
    print(f"throughput alone: {alone} (miss {_miss(alone):.3f}); with class times: {both} (miss {_miss(both):.3f})")
    assert _miss(both) < 0.1, both  # 0.45 -> 0.455, 0.25 -> 0.242 here; throughput alone: 0.25 -> 0.454
    assert _miss(both) < 0.5 * _miss(alone), (alone, both)


def test_the_fit_report_counts_the_class_residuals():
    points, _ = points_from_runs(_runs())
    g = fit_group("cpu", h.CPU_HOST, points)
    text = report(g)
    n = sum(len(measured_classes(p)) for p in points)
    assert f"per-class times: 4 of 4 points profiled their op classes ({n} class residuals beside 4 throughput" in text
    entry = build_set("c", [g], {"kind": "mlflow", "store": "x", "run_ids": []})["platforms"]["cpu"]
    assert entry["class_time_points"] == 4
