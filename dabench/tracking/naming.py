"""What a dabench run is called and tagged in MLflow (the Hydra task and dabench.api share it)."""

from __future__ import annotations

from typing import Any

from dabench.config.sections import RunConfig
from dabench.core.result import RunResult


def run_name(container: dict[str, Any]) -> str:
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
    return (
        f"{model.get('name', '?')} L{model.get('n_layers')} H{model.get('hidden_size')} "
        f"{hardware.get('name', '?')}{' ' + str(knob) if knob else ''}{layout} {precision} b{batch}"
    )


def host_key(arch: str, hardware_name: str) -> str:
    """Which machine of a platform measured a run (``dabench.host_key``; docs/fitting.md): the CPU
    model for cpu, the GPU's name for cuda (this process's device 0), the hardware config's name
    (the vendor system) otherwise. Runs of one platform with different keys are fitted apart."""
    if arch == "cpu":
        from dabench.host.info import cpu_model

        return f"cpu:{cpu_model()}"
    if arch == "cuda":
        import sys

        torch = sys.modules.get("torch")  # measured on the GPU: torch is loaded; never import it here
        try:
            if torch is not None and torch.cuda.is_available():
                return f"cuda:{torch.cuda.get_device_name(0)}"
        except Exception:  # a broken driver: the config's name still separates machines
            pass
    return f"{arch}:{hardware_name}"


def run_tags(rc: RunConfig | None, result: RunResult | None, container: dict[str, Any]) -> dict[str, str]:
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
        if result.mode != "predict":  # measured: which machine (fit --from-mlflow keeps machines apart)
            tags["dabench.host_key"] = host_key(str(hardware.get("arch")), str(hardware.get("name")))
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
            tags.update({f"dabench.core.profile.{k}": v for k, v in profile.tags.items()})
    if rc is not None:
        tags.update(rc.tracking.tags)
    else:
        tags.update({str(k): str(v) for k, v in ((container.get("tracking") or {}).get("tags") or {}).items()})
    return tags
