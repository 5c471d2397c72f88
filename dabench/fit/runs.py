"""Measured runs of an MLflow store -> calibration points (:class:`.points.Point` whose source
is the run), each left-out run with its reason.

:func:`points_from_runs` takes MLflow's run data (``{"run_id", "tags", "params", "metrics"}``
per run) and touches neither MLflow nor a file; a run with any metric the number guard
(:mod:`dabench.core.numbers`) refuses is left out. :func:`group_points` keys points by platform and
machine. Rules: docs/fitting.md, "What becomes a point".
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any, Iterable, Mapping

from dabench.core.numbers import bad_metrics
from dabench.core.platforms import arch_of_format
from dabench.fit.points import LeftOut, Point, group_by

#: params that do not change what is measured (left out of a config's identity)
_NOT_IDENTITY = (
    "run.seed", "run.warmup_steps", "run.timed_steps", "run.profile_subtasks", "run.plots", "run.lr", "hardware.mode",
    "hardware.constants", "hardware.python", "run.allow_oversubscribe",
)  # fmt: skip


DAMAGED = "damaged stored metric (not used as data):"  #: how a left-out run's reason starts


def _value(raw: Any) -> Any:
    """A param string back to its value (MLflow stores str(value))."""
    if not isinstance(raw, str):
        return raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw  # a plain string ("none" is a value of some knobs, not None: str(None) is "None")


def unflatten(params: Mapping[str, Any]) -> dict[str, Any]:
    """``{'model.n_layers': '2'}`` -> ``{'model': {'n_layers': 2}}`` (the inverse of config.build.flatten)."""
    out: dict[str, Any] = {}
    for dotted, raw in sorted(params.items()):
        keys = str(dotted).split(".")
        node = out
        for key in keys[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[keys[-1]] = _value(raw)
    return out


def _num(metrics: Mapping[str, Any], name: str) -> float:
    """Metric ``name`` (NaN when absent; the number guard has refused any that is no number)."""
    value = metrics.get(name)
    return math.nan if value is None else float(value)


def config_key(params: Mapping[str, Any], arch: str, host: str) -> str:
    """The identity of a measured config: platform, machine and every param that changes the work."""
    keep = {
        k: str(v)
        for k, v in params.items()
        if k.split(".")[0] in ("model", "precision", "parallel", "run", "hardware")
        and k not in _NOT_IDENTITY
        and not k.startswith(("tracking.", "hardware.options.runner_"))
    }
    return json.dumps([arch, host, sorted(keep.items())])


def _describe(cfg: Mapping[str, Any] | None, arch: str) -> str:
    if not cfg:
        return arch
    model, run = cfg.get("model") or {}, cfg.get("run") or {}
    par, prec = cfg.get("parallel") or {}, cfg.get("precision") or {}
    layout = "" if par.get("strategy", "none") == "none" else f" {par.get('strategy')}{par.get('degree')}"
    return (
        f"{model.get('name', '?')} L{model.get('n_layers')} H{model.get('hidden_size')} "
        f"{prec.get('name', '?')} b{run.get('batch_size')}{layout}"
    )


def no_config_reason(params: Mapping[str, Any]) -> str:
    """Why a run has no config to predict it from: for an ingested artifact, the config keys it
    does not state (``import.config.missing``, recorded by ``dabench ingest --log``) and those it
    does; an artifact ingested before that was recorded says so."""
    fmt = params.get("import.format")
    if not fmt:
        return "no run config recorded: nothing to predict it from"
    missing = str(params.get("import.config.missing") or "")
    if not missing:
        return f"an ingested {fmt} artifact recorded without its config (re-ingest it: dabench ingest DIR --log)"
    if missing == "none":
        return f"the {fmt} artifact's stated config does not build here: {params.get('import.config.error', '')}"
    stated = sorted(k.split(".", 2)[2] for k in params if str(k).startswith("import.config.") and k.count(".") >= 3)
    return (
        f"the {fmt} artifact does not state {missing.replace(',', ', ')}"
        + (f" (it states {', '.join(stated)})" if stated else " (it states no model or deployment)")
        + ": nothing to predict it from"
    )


def points_from_runs(runs: Iterable[Mapping[str, Any]]) -> tuple[list[Point], list[LeftOut]]:
    """(points, left out with reasons) of ``runs`` (docs/fitting.md, "What becomes a point")."""
    points, left = [], []
    for run in runs:
        rid, tags = run["run_id"], run.get("tags") or {}
        params, metrics = run.get("params") or {}, run.get("metrics") or {}
        if tags.get("dabench.mode") != "measure" or tags.get("dabench.parent") == "true":
            continue  # predicted, a sweep's parent, a refused config (mode none), a fit's own run
        status = tags.get("dabench.status", "ok")
        if status != "ok":
            why = "the result check failed" if status in ("invalid_result", "diverged") else f"status {status}"
            left.append(LeftOut(rid, f"{why}: {tags.get('dabench.reason', '')[:200]}".rstrip(": ")))
            continue
        fmt = params.get("import.format")
        # the platform: the run's dabench.arch tag, else its ingested format's ("" if neither)
        arch = str(tags.get("dabench.arch") or arch_of_format(str(fmt)) or "")
        if arch in ("", "None"):
            left.append(LeftOut(rid, "no platform recorded (tag dabench.arch)"))
            continue
        damage = bad_metrics(metrics)
        if damage:
            left.append(LeftOut(rid, f"{DAMAGED} {damage}"))
            continue
        # the machine: its dabench.host_key tag (CPU model, GPU name, vendor system), else
        # <arch>:<format> for an ingested artifact, else host:<host name> (older runs)
        host = tags.get("dabench.host_key") or (f"{arch}:{fmt}" if fmt else f"host:{tags.get('dabench.host', '?')}")
        samples = _num(metrics, "throughput.samples_per_s")
        if not (samples > 0):
            left.append(LeftOut(rid, "no measured throughput (metric throughput.samples_per_s)"))
            continue
        cfg = unflatten({k: v for k, v in params.items() if not str(k).startswith("import.")}) or None
        if cfg is not None and not all(isinstance(cfg.get(g), dict) for g in ("model", "hardware", "precision")):
            cfg = None
        classes = {
            k.split(".", 1)[1]: v
            for k, v in metrics.items()
            if k.startswith("class_time.") and isinstance(v, (int, float))
        }
        peak = _num(metrics, "perf.peak_tflops") * 1e12
        ridge = _num(metrics, "roofline.ridge_intensity")
        level = next((k.rsplit(".", 1)[1] for k in metrics if k.startswith("tier1.bandwidth_efficiency.")), "dram")
        ceilings = (peak, peak / ridge, level) if peak > 0 and ridge > 0 else None
        native = tags.get("dabench.core.profile.precision_native", tags.get("dabench.profile.precision_native"))
        points.append(
            Point(
                rid,
                arch,
                precision=str(((cfg or {}).get("precision") or {}).get("name", "")),
                published=samples,
                use="fit",
                source=f"ingest:{fmt}" if fmt else "dabench",
                run_id=rid,
                host_key=host,
                config=cfg,
                key=config_key(params, arch, host),
                step_s=_num(metrics, "step_time.median_s"),
                step_p10=_num(metrics, "step_time.p10_s"),
                step_p90=_num(metrics, "step_time.p90_s"),
                class_times=classes,
                native=str(native) != "false",
                ceilings=ceilings,
                describe=_describe(cfg, arch),
                no_config="" if cfg is not None else no_config_reason(params),
            )
        )
    return points, left


def group_points(
    points: list[Point], arch: str | None = None, host: str | None = None
) -> dict[tuple[str, str], list[Point]]:
    """(platform, host key) -> its points: machines of one platform are fitted apart."""
    mine = [p for p in points if (not arch or p.platform == arch) and (not host or p.host_key == host)]
    return group_by(mine, lambda p: (p.platform, p.host_key))
