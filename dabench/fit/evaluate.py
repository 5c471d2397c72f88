"""Predict a calibration point: its config composed from conf/ (:func:`dabench.config.compose`)
with the row's overrides, or a run's recorded config (:func:`prepare`); then the one predictor
(:mod:`dabench.predictor`: the model and the result check), then the metric the point compares
(docs/perfmodel.md, "Knobs, sources and calibration").
``options`` replaces hardware knobs for a candidate of the fitter (a row's own overrides win), and
hardware fields given as ``memory.<name>.<field>`` (links, compute_units alike).
"""

from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Mapping

from dabench.config.build import build_run_config
from dabench.config.compose import compose
from dabench.core.ceilings import Ceilings
from dabench.core.platforms import platform
from dabench.core.status import CapacityError, DabenchError, Diverged, InvalidResult
from dabench.fit.points import LeftOut, Point
from dabench.fit.sources import hardware_yaml, load_sources
from dabench.host.ceilings import resolve_ceilings
from dabench.perfmodel.constants import fitted_options
from dabench.predictor import predict

#: hardware lists whose fields a candidate may set as ``<group>.<name>.<field>`` (not options)
FIELD_GROUPS = ("memory", "links", "compute_units")


def point_config(point: Point, precision: str | None = None, options: Mapping[str, Any] | None = None) -> dict:
    """The run config mapping of ``point`` (at ``precision``, with the candidate knobs ``options``)."""
    groups = {
        "model": point.model,
        "hardware": point.platform,
        "parallel": "none",
        "precision": precision or point.precision,
    }
    split = [override.partition("=") for override in point.overrides]
    groups.update({key: value for key, _, value in split if "." not in key})  # a conf group's choice
    dotted = [
        f"run.batch_size={point.batch}",
        f"run.grad_accum={point.grad_accum}",
        "tracking.enabled=false",
        *(f"++{key}{eq}{value}" for key, eq, value in split if "." in key),  # a knob the YAML may not list
    ]
    cfg = compose([f"{group}={name}" for group, name in groups.items()] + dotted)
    if options:
        own = {o.split("=", 1)[0].removeprefix("hardware.options.") for o in point.overrides}
        hw = cfg["hardware"]
        for key, value in options.items():
            group, _, rest = key.partition(".")
            if group in FIELD_GROUPS:  # a hardware field: <group>.<name or kind>.<field>
                name, _, leaf = rest.partition(".")
                found = [e for e in hw[group] if name in (e.get("name"), e.get("kind"))]
                if not found or leaf not in found[0]:
                    raise ValueError(f"{key}: no such hardware field of {point.platform}")
                found[0][leaf] = value
            elif key not in own:
                hw["options"][key] = value
    return cfg


#: a point's metric -> (the prediction's metric, scale)
POINT_METRICS = {
    "samples_per_s": ("throughput.samples_per_s", 1.0),
    "tokens_per_s": ("throughput.tokens_per_s", 1.0),
    "allocation_pct": ("tier1.allocation_ratio", 100.0),
}


def predict_point(point: Point, options: Mapping[str, Any] | None = None) -> float:
    """The model's value of ``point.metric`` (NaN when the model refuses a throughput point, or
    when a prediction breaks a bound)."""
    if point.run_id:  # a measured run, prepared
        profile = predict_profile(point, options or {})
        return math.nan if profile is None else float(profile.samples_per_s)
    if point.metric == "scaling_keep_pct":  # samples/s kept from half the chips
        cfg = point_config(point, None, options)
        half = {**cfg, "parallel": {**cfg["parallel"], "degree": int(cfg["parallel"]["degree"]) // 2}}
        return 100.0 * _ratio(cfg, half)
    if point.metric == "mixed_gain_pct":
        return 100.0 * (_ratio(point_config(point, "mixed", options), point_config(point, "fp16", options)) - 1.0)
    try:
        metrics = predict(point_config(point, None, options)).metrics
    except CapacityError:
        return 0.0 if point.metric == "feasible" else math.nan
    except (Diverged, InvalidResult):
        return math.nan
    if point.metric == "feasible":
        return 1.0
    if point.metric not in POINT_METRICS:
        raise ValueError(f"point {point.id}: unknown metric {point.metric!r}")
    name, scale = POINT_METRICS[point.metric]
    return scale * float(metrics[name])


def _ratio(cfg: dict, other: dict) -> float:
    """samples/s of ``cfg`` over ``other``'s (NaN when a prediction breaks a bound)."""
    try:
        return predict(cfg).metrics["throughput.samples_per_s"] / predict(other).metrics["throughput.samples_per_s"]
    except (Diverged, InvalidResult):
        return math.nan


def prepare(points: list[Point]) -> tuple[list[Point], list[LeftOut]]:
    """Build each point's RunConfig and ceilings; return (the points that can be predicted, those
    that cannot with the reason)."""

    usable, unusable = [], []
    for p in points:
        if p.config is None:
            unusable.append(LeftOut(p.run_id, p.no_config or "no run config recorded: nothing to predict it from"))
            continue
        try:
            hw = p.config["hardware"]
            shipped = (
                hardware_yaml(p.platform).get("options") or {} if (hw.get("arch") or p.platform) == p.platform else {}
            )
            # knobs added since the run was recorded take the shipped value (they do not change what it measured)
            rc = build_run_config(
                {
                    **p.config,
                    "tracking": {"enabled": False},
                    "hardware": {
                        **hw,
                        "mode": "predict",
                        "constants": "published",
                        "options": {**shipped, **(hw.get("options") or {})},
                    },
                }
            )
            if p.ceilings is not None:
                roof = Ceilings(*p.ceilings, "recorded on the measured run")
            elif platform(rc.hardware.arch).host_cpu:
                unusable.append(
                    LeftOut(
                        p.run_id,
                        "no ceilings recorded (the CPU calibration was refused when it ran): "
                        "a CPU prediction needs them",
                    )
                )
                continue
            else:
                roof = resolve_ceilings(rc.hardware, rc.precision)
        except Exception as error:  # a config this version cannot rebuild: said, not fatal
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            unusable.append(LeftOut(p.run_id, f"its recorded config does not build here: {first[:200]}"))
            continue
        p.rc, p.roof = rc, roof
        usable.append(p)
    return usable, unusable


def predict_profile(p: Point, options: Mapping[str, Any]) -> Any:
    """The model's Profile of point ``p`` with ``options`` over its config's (None when refused)."""
    hw = replace(p.rc.hardware, options={**p.rc.hardware.options, **options})
    try:
        return predict(replace(p.rc, hardware=hw), p.roof).profile
    except DabenchError:
        return None


def base_options(arch: str, base: str = "published") -> dict[str, Any]:
    """The knob values a fit starts from: the YAML's numeric options with set ``base``'s fitted ones."""
    settings = {path[len("options.") :] for path, entry in load_sources(arch).items() if entry.kind == "setting"}
    options = hardware_yaml(arch).get("options") or {}
    keep = {
        k: v for k, v in options.items() if k not in settings or isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    return {**keep, **fitted_options(base, arch)}


@contextmanager
def quiet_model():
    """The device model's emulated-precision warning (once per prediction) off while refitting."""
    quiet = logging.getLogger("dabench.perfmodel.device")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        yield
    finally:
        quiet.setLevel(level)
