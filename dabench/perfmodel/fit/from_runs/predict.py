"""Predicting a point: its RunConfig, op graph and ceilings built once, then the model run with
candidate knob values.

Contract: :func:`prepare` fills each point's ``rc``, ``graph`` and ``roof`` (what a prediction
needs) and returns the points that cannot be predicted with the reason (they stay points; no fit
sees them); :func:`predict` is the model's samples/s of a prepared point with knob ``options``
over its config's (NaN when the model refuses); :func:`base_options` is where a fit starts.
Details: docs/fitting.md, "The fit".
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Mapping

from dabench.config.build import build_run_config
from dabench.core.ceilings import Ceilings
from dabench.core.status import DabenchError
from dabench.host.ceilings import resolve_ceilings
from dabench.perfmodel.fit.constant_set import fitted_options
from dabench.perfmodel.fit.from_runs.points import LeftOut, RunPoint
from dabench.perfmodel.fit.sources import hardware_yaml, load_sources
from dabench.workload.opgraph import build_opgraph


def prepare(points: list[RunPoint]) -> list[LeftOut]:
    """Build each point's RunConfig, op graph and ceilings (what a prediction needs); the points
    that cannot be predicted are returned with the reason (they stay points, but no fit sees them)."""

    unusable = []
    for p in points:
        if p.config is None:
            unusable.append(LeftOut(p.run_id, p.no_config or "no run config recorded: nothing to predict it from"))
            continue
        try:
            cfg = dict(p.config)
            cfg["tracking"] = {"enabled": False}

            hw = cfg["hardware"]
            shipped = hardware_yaml(p.arch).get("options") or {} if (hw.get("arch") or p.arch) == p.arch else {}
            # knobs added since the run was recorded take the shipped value (they do not change what it measured)
            cfg["hardware"] = {
                **hw,
                "mode": "predict",
                "constants": "published",
                "options": {**shipped, **(hw.get("options") or {})},
            }
            rc = build_run_config(cfg)
            graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
            if p.ceilings is not None:
                roof = Ceilings(p.ceilings[0], p.ceilings[1], p.ceilings[2], "recorded on the measured run")
            elif rc.hardware.arch == "cpu":
                unusable.append(
                    LeftOut(
                        p.run_id,
                        "no ceilings recorded (the CPU calibration was refused when it "
                        "ran): a CPU prediction needs them",
                    )
                )
                continue
            else:
                roof = resolve_ceilings(rc.hardware, rc.precision)
        except Exception as error:  # a config this version cannot rebuild: said, not fatal
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            unusable.append(LeftOut(p.run_id, f"its recorded config does not build here: {first[:200]}"))
            continue
        p.rc, p.graph, p.roof = rc, graph, roof
    return unusable


def predict_profile(p: RunPoint, options: Mapping[str, Any]) -> Any:
    """The model's Profile of point ``p`` with ``options`` over its config's (None when refused)."""
    from dabench.perfmodel import get_predictor

    hw = replace(p.rc.hardware, options={**p.rc.hardware.options, **options})
    try:
        return get_predictor(hw.arch)(replace(p.rc, hardware=hw), p.graph, p.roof)
    except DabenchError:
        return None


def predict(p: RunPoint, options: Mapping[str, Any]) -> float:
    """Predicted samples/s of point ``p`` with ``options`` over its config's (NaN when refused)."""
    profile = predict_profile(p, options)
    return math.nan if profile is None else float(profile.samples_per_s)


def base_options(arch: str, base: str = "published") -> dict[str, Any]:
    """The knob values a fit starts from: conf/hardware/<arch>.yaml's options less its switches and
    modes (settings that are no number: a run states them for itself, a fit moves none), with the
    set ``base``'s fitted ones over them."""
    settings = {path[len("options.") :] for path, entry in load_sources(arch).items() if entry.kind == "setting"}
    options = hardware_yaml(arch).get("options") or {}
    keep = {
        k: v for k, v in options.items() if k not in settings or isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    return {**keep, **fitted_options(base, arch)}


@contextmanager
def quiet_model():
    """The device model's emulated-precision warning (once per prediction) off while refitting."""
    import logging

    quiet = logging.getLogger("dabench.perfmodel.device")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        yield
    finally:
        quiet.setLevel(level)
