"""dabench.predictor: the one in-process predictor, its op graph cache, its result check, and that
every caller (pipeline, advise, tuner, fit, findings) predicts through it."""

from __future__ import annotations

import ast
import math
from dataclasses import replace
from pathlib import Path

import pytest

from dabench import predictor
from dabench.config.build import build_run_config
from dabench.core.status import Diverged, InvalidResult
from dabench.findings.registry import config
from dabench.fit.evaluate import predict_point, predict_profile
from dabench.fit.points import load_points
from dabench.pipeline.execute import execute

ROOT = Path(__file__).resolve().parents[2] / "dabench"


def _rdu() -> dict:
    return config("rdu", model="gpt2_test", batch=8)


def test_a_mapping_and_its_run_config_predict_the_same():
    cfg = _rdu()
    a, b = predictor.predict(cfg), predictor.predict(build_run_config(cfg))
    assert a.metrics == b.metrics and a.metrics["throughput.samples_per_s"] > 0
    assert a.graph is b.graph is predictor.opgraph(a.rc)  # one graph per model, micro-batch, precision


def test_the_pipeline_shares_the_predictors_graph_and_numbers():
    rc = build_run_config({**_rdu(), "hardware": {**_rdu()["hardware"], "mode": "predict"}})
    result = execute(rc)
    assert result.graph is predictor.opgraph(rc)
    banded = {k for k in result.metrics if k.endswith((".lo", ".hi"))}
    assert banded and {k: v for k, v in result.metrics.items() if k not in banded} == predictor.predict(rc).metrics
    assert {k: v for k, v in result.metrics.items() if k in banded} == predictor.band(rc, predictor.predict(rc).metrics)


def _breaking(monkeypatch, value: float) -> None:
    """Make every prediction's compute efficiency ``value`` (a model bug, as the check sees it)."""
    real = predictor.compute_metrics
    monkeypatch.setattr(
        predictor, "compute_metrics", lambda *a, **k: {**real(*a, **k), "tier1.compute_efficiency": value}
    )


@pytest.mark.parametrize("value, error", [(1.5, InvalidResult), (math.nan, Diverged)])
def test_a_prediction_that_breaks_a_bound_is_refused(monkeypatch, value, error):
    _breaking(monkeypatch, value)
    with pytest.raises(error, match="tier1.compute_efficiency"):
        predictor.predict(_rdu())
    assert predictor.predict(_rdu(), check=False).metrics["tier1.compute_efficiency"] is value


def test_fit_predictions_go_through_the_check(monkeypatch):
    point = next(p for p in load_points() if p.platform == "rdu" and p.metric == "samples_per_s")
    assert predict_point(point) > 0
    _breaking(monkeypatch, 1.5)
    assert math.isnan(predict_point(point))  # refused, as a capacity failure is
    prepared = replace(point)
    prepared.rc, prepared.roof = build_run_config(_rdu()), None
    assert predict_profile(prepared, {}) is None


def test_only_the_predictor_runs_a_model_or_builds_an_op_graph():
    """Op graphs: built by the predictor's cache only (the measured path and pre-flight share it);
    models: run by the predictor only."""
    callers = {"build_opgraph": set(), "get_predictor": set()}
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in callers:
                callers[node.func.id].add(path.relative_to(ROOT).as_posix())
    assert callers == {"build_opgraph": {"predictor.py"}, "get_predictor": {"predictor.py"}}
