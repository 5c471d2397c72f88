"""Predict a calibration point: its config from the shipped YAML plus the row's overrides, then
the analytical model, then the metric the row compares.

Configs are composed from conf/ with OmegaConf (no Hydra: a point costs milliseconds, so the
fitter can evaluate hundreds of candidates). ``options`` replaces hardware knobs for a candidate.

Metrics (``Point.metric``):

- ``samples_per_s``, ``tokens_per_s``: the prediction's throughput.
- ``allocation_pct``: tier-1 allocation ratio x 100.
- ``feasible``: 1 when the model predicts the config runs, 0 when it refuses it for capacity.
- ``mixed_gain_pct``: samples/s at precision=mixed over samples/s at precision=fp16, minus 1, x 100.
- ``scaling_keep_pct``: samples/s of the row's config over samples/s of the same config at half
  its ``parallel.degree``, x 100 (how much of the smaller group's throughput the larger one keeps).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

import yaml

from dabench.config.build import build_run_config
from dabench.config.paths import CONF_DIR
from dabench.core.status import CapacityError
from dabench.host.ceilings import resolve_ceilings
from dabench.metrics.summary import compute_metrics
from dabench.perfmodel.fit.points import Point
from dabench.workload.opgraph import build_opgraph

CONF = CONF_DIR


@lru_cache(maxsize=None)
def _load(group: str, name: str) -> dict[str, Any]:
    from omegaconf import OmegaConf  # its YAML loader reads 7.5e15 as a number (PyYAML: a string)

    data = OmegaConf.to_container(OmegaConf.load(CONF / group / f"{name}.yaml"), resolve=False) or {}
    defaults = data.pop("defaults", None) or []
    # a same-group base (conf/hardware/cuda_a100.yaml: ``defaults: [cuda, _self_]``), merged as Hydra
    # does: mappings key by key, lists replaced
    bases = [entry for entry in defaults if isinstance(entry, str) and entry != "_self_"]
    if bases:
        merged = OmegaConf.create({})
        for base in bases:
            merged = OmegaConf.merge(merged, _load(group, base))
        data = OmegaConf.to_container(OmegaConf.merge(merged, data), resolve=False)
    return data


def _set(cfg: dict[str, Any], dotted: str, raw: str) -> None:
    keys = dotted.split(".")
    node = cfg
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = yaml.safe_load(raw)


def point_config(point: Point, precision: str | None = None, options: Mapping[str, Any] | None = None) -> dict:
    """The run config mapping of ``point`` (groups from conf/, then the row's overrides)."""
    groups = {
        "model": point.model,
        "hardware": point.platform,
        "parallel": "none",
        "precision": precision or point.precision,
    }
    dotted = []
    for override in point.overrides:
        key, _, value = override.partition("=")
        if "." not in key:
            groups[key] = value
        else:
            dotted.append((key, value))
    import copy

    cfg = {group: copy.deepcopy(_load(group, name)) for group, name in groups.items()}
    cfg["hardware"]["options"] = dict(cfg["hardware"].get("options") or {})
    cfg["run"] = {"batch_size": point.batch, "grad_accum": point.grad_accum}
    cfg["tracking"] = {"enabled": False}
    if options:  # a candidate's knobs; the row's own overrides still win
        cfg["hardware"]["options"].update(options)
    for key, value in dotted:
        _set(cfg, key, value)
    return cfg


def _predict(cfg: dict) -> tuple[Any, dict[str, float]]:
    from dabench.perfmodel import get_predictor

    rc = build_run_config(cfg)
    graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    ceilings = resolve_ceilings(rc.hardware, rc.precision)
    profile = get_predictor(rc.hardware.arch)(rc, graph, ceilings)
    metrics = compute_metrics(profile, graph, ceilings, rc.data_copies)
    return profile, metrics


def predict_mapping(cfg: dict) -> tuple[Any, dict[str, float]]:
    """(profile, metrics) of a run config mapping (as :func:`point_config` builds it); CapacityError when refused."""
    return _predict(cfg)


def predict_point(point: Point, options: Mapping[str, Any] | None = None) -> float:
    """The model's value of ``point.metric`` (NaN when the model refuses a throughput point)."""

    if point.metric == "scaling_keep_pct":
        cfg = point_config(point, None, options)
        half = {**cfg, "parallel": {**cfg["parallel"], "degree": int(cfg["parallel"]["degree"]) // 2}}
        larger = _predict(cfg)[1]["throughput.samples_per_s"]
        smaller = _predict(half)[1]["throughput.samples_per_s"]
        return 100.0 * larger / smaller
    if point.metric == "mixed_gain_pct":
        mixed = _predict(point_config(point, "mixed", options))[1]["throughput.samples_per_s"]
        fp16 = _predict(point_config(point, "fp16", options))[1]["throughput.samples_per_s"]
        return 100.0 * (mixed / fp16 - 1.0)
    try:
        _, metrics = _predict(point_config(point, None, options))
    except CapacityError:
        if point.metric == "feasible":
            return 0.0
        return float("nan")
    if point.metric == "feasible":
        return 1.0
    if point.metric == "samples_per_s":
        return float(metrics["throughput.samples_per_s"])
    if point.metric == "tokens_per_s":
        return float(metrics["throughput.tokens_per_s"])
    if point.metric == "allocation_pct":
        return 100.0 * float(metrics["tier1.allocation_ratio"])
    raise ValueError(f"point {point.id}: unknown metric {point.metric!r}")
