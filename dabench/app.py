"""The Hydra task: compose -> validate -> run (measure or predict) -> record -> return samples/s.

A single run with bad input exits with status 2 before any work and records nothing; inside a
``-m`` multirun, the same input is recorded as an ``invalid_config`` run and the sweep goes on.
A single run that ends in any status other than ok is recorded and exits with status 1.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from dabench.config import RunConfig, apply_placement, build_run_config, flatten
from dabench.runner import RunResult, execute
from dabench.status import ConfigError, Status

log = logging.getLogger("dabench")


def _is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def _run_name(container: dict[str, Any]) -> str:
    """A short, distinguishing name: model, layers, hidden size, hardware (and its mode knob),
    parallel layout, precision, micro-batch."""
    model = container.get("model") or {}
    hardware = container.get("hardware") or {}
    parallel = container.get("parallel") or {}
    options = hardware.get("options") or {}
    knob = options.get("compile_mode") or options.get("execution_mode")
    strategy = parallel.get("strategy", "none")
    layout = ""
    if strategy == "pp" and parallel.get("layers_per_stage"):
        layout = " pp[" + ",".join(str(n) for n in parallel["layers_per_stage"]) + "]"
    elif strategy != "none":
        layout = f" {strategy}{parallel.get('degree')}"
    if (parallel.get("replicas") or 1) > 1:
        layout += f"x{parallel['replicas']}"
    precision = (container.get("precision") or {}).get("name", "?")
    batch = (container.get("run") or {}).get("batch_size")
    return (f"{model.get('name', '?')} L{model.get('n_layers')} H{model.get('hidden_size')} "
            f"{hardware.get('name', '?')}{' ' + str(knob) if knob else ''}{layout} {precision} b{batch}")


def _tags(rc: RunConfig | None, result: RunResult | None, container: dict[str, Any]) -> dict[str, str]:
    hardware = container.get("hardware") or {}
    tags = {
        "dabench.hardware": str(hardware.get("name")),
        "dabench.arch": str(hardware.get("arch")),
        "dabench.backend": str(hardware.get("backend")),
        "dabench.model": str((container.get("model") or {}).get("name")),
    }
    if result is not None:
        # validate runs carry measured numbers in the main names and predictions under predict.*
        tags["dabench.mode"] = "predict" if result.mode == "predict" else "measure"
        tags["dabench.status"] = result.status.value
        if result.mode == "validate":
            tags["dabench.validate"] = "true"
        if result.reason:
            tags["dabench.reason"] = result.reason
        if result.diagnosis:
            tags["dabench.diagnosis"] = result.diagnosis[0]
            tags["dabench.diagnosis_reason"] = result.diagnosis[1]
        if result.ceilings:
            tags["dabench.ceilings"] = result.ceilings.source
        tags.update(result.notes)
        profile = result.profile or result.predicted
        if profile is not None:
            tags["dabench.source"] = profile.source
            tags.update({f"dabench.profile.{k}": v for k, v in profile.tags.items()})
    if rc is not None:
        tags.update(rc.tracking.tags)
    else:
        tags.update({str(k): str(v) for k, v in ((container.get("tracking") or {}).get("tags") or {}).items()})
    return tags


def _summary(result: RunResult, name: str) -> str:
    m = result.metrics
    if result.status is not Status.OK:
        return f"dabench: {result.status.value} | {name} | {result.reason.splitlines()[0] if result.reason else ''}"
    kind = "PREDICTED" if result.mode == "predict" else result.mode
    parts = [
        f"dabench: ok | {kind} | {name}",
        f"{m['throughput.samples_per_s']:,.1f} samples/s",
        f"{m['throughput.tokens_per_s']:,.0f} tokens/s",
        f"step {m['step_time.median_s'] * 1e3:,.2f} ms",
        f"compute eff {m['tier1.compute_efficiency']:.1%}",
    ]
    if "tier1.allocation_ratio" in m:
        parts.append(f"alloc {m['tier1.allocation_ratio']:.1%}")
    if "tier1.load_imbalance" in m:
        parts.append(f"LI {m['tier1.load_imbalance']:.2f}")
    if "predict.rel_error.samples_per_s" in m:
        parts.append(f"prediction error {m['predict.rel_error.samples_per_s']:+.1%}")
    if result.diagnosis:
        parts.append(result.diagnosis[0])
    return " | ".join(parts)


def run_job(cfg: DictConfig) -> float:
    """The task function: returns samples/s for an ok run, NaN otherwise."""
    container = OmegaConf.to_container(cfg, resolve=True)
    try:  # a pp placement implies layers_per_stage, degree and n_layers: name and log what runs
        container = apply_placement(container)
    except ConfigError:
        pass  # build_run_config below refuses it with the same message
    tracking = container.get("tracking") or {}
    name = tracking.get("run_name") or _run_name(container)
    multirun = _is_multirun()
    try:
        rc = build_run_config(container)
    except ConfigError as error:
        if not multirun:
            print(f"dabench: {error}", file=sys.stderr)
            raise SystemExit(2)
        log.error("%s", error)
        result = RunResult(Status.INVALID_CONFIG, str(error), "none")
        from dabench.report.artifacts import write_artifacts

        artifacts = write_artifacts(Path.cwd() / "artifacts", container, result, name, 1)
        if tracking.get("enabled", True):
            from dabench.tracking import log_run

            log_run(experiment=tracking.get("experiment") or "dabench", uri=tracking.get("uri"), run_name=name,
                    params=flatten(container), metrics={}, tags={**_tags(None, result, container),
                                                                 "dabench.mode": "none"},
                    artifact_dir=artifacts, failed=True)
        print(_summary(result, name), flush=True)
        return result.objective

    log.info("running %s (hardware.mode=%s)", name, rc.hardware.mode)
    result = execute(rc)
    artifacts = None
    try:
        from dabench.report.artifacts import write_artifacts

        artifacts = write_artifacts(Path.cwd() / "artifacts", container, result, name, rc.data_copies)
    except Exception as error:  # a broken plot must not lose the run
        log.warning("could not write artifacts: %s", error)
    if rc.tracking.enabled:
        from dabench.tracking import log_run

        run_id = log_run(experiment=rc.tracking.experiment, uri=rc.tracking.uri, run_name=name,
                         params=flatten(container), metrics=result.metrics, tags=_tags(rc, result, container),
                         artifact_dir=artifacts, failed=result.status is not Status.OK)
        log.info("MLflow run %s", run_id)
    print(_summary(result, name), flush=True)
    if result.status is not Status.OK and not multirun:
        raise SystemExit(1)
    return result.objective
