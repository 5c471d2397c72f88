"""The platform registry: what dabench does differently per platform (``hardware.arch``), one
record each. The rest of dabench asks :func:`platform` and the helpers below and never compares an
arch name itself; code is named ``module:attr`` and imported on first use (:func:`load`).
Adding a platform: docs/architecture.md, "Platforms"."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Mapping

from dabench.core.status import ConfigError


@dataclass(frozen=True)
class Platform:
    """One platform's facts and parts."""

    name: str  #: ``hardware.arch``; also its preset (conf/hardware/<name>.yaml) and advise's name
    predictor: str  #: the analytical model: ``predict(rc, graph, ceilings) -> Profile``
    backends: Mapping[str, str]  #: ``hardware.backend`` -> its Backend class
    host_backends: tuple[str, ...] = ()  #: of ``backends``, those run on this machine's CPU and memory
    host_cpu: bool = False  #: it is this machine's CPU: null ceilings calibrated, threads set, probed
    tf32: bool = False  #: fp32 matmuls may run on TF32 units (``hardware.options.tf32``)
    device_name: str | None = None  #: ``() -> str | None``: this machine's device (the run's host key)
    formats: tuple[str, ...] = ()  #: ingested artifact formats this platform's model prices
    mode_keys: tuple[str, ...] = ()  #: compile-mode keys an ingested run takes dabench's default for
    pipeline_grad_accum: bool = False  #: a pipeline over p stages needs >= 2p - 1 micro-batches a step
    sweep: str | None = None  #: the shipped Optuna sweep (sweeps/<sweep>.yaml) advise starts from
    space: str | None = None  #: advise's shaping of that space: ``(space, args, model, chips) -> space``
    tiles_per_chip: int | None = None  #: an instance of ``hardware.options.tiles`` counts as tiles / this chips
    generations: bool = False  #: presets are chip generations (cuda_a100, ...): the preset name is a reach fact


PLATFORMS: dict[str, Platform] = {
    p.name: p
    for p in (
        Platform(
            "cpu",
            "dabench.perfmodel.device:predict",
            {"cpu": "dabench.backends.cpu:CpuBackend"},
            host_backends=("cpu",),
            host_cpu=True,
            device_name="dabench.host.info:cpu_model",
            sweep="cpu_deploy",
        ),
        Platform(
            "cuda",
            "dabench.perfmodel.device:predict",
            {"cuda": "dabench.backends.cuda:CudaBackend"},
            tf32=True,
            generations=True,
            device_name="dabench.host.info:cuda_device_name",
            space="dabench.advise.space:cuda_space",
        ),
        Platform(
            "wse2",
            "dabench.perfmodel.wse2:predict",
            {
                "cstorch": "dabench.backends.wse2:CstorchBackend",
                "cstorch_cpu": "dabench.backends.wse2:CstorchCpuBackend",
            },
            host_backends=("cstorch_cpu",),
            formats=("cerebras_compile_report", "cerebras_appliance_run"),
            mode_keys=("hardware.options.execution_mode",),
            sweep="wse2_deploy",
            space="dabench.advise.space:wse2_space",
        ),
        Platform(
            "rdu",
            "dabench.perfmodel.rdu:predict",
            {"sambaflow": "dabench.backends.rdu:SambaflowBackend"},
            formats=("sambaflow_compile", "sambatune_section_report"),
            sweep="rdu_deploy",
            tiles_per_chip=8,
            space="dabench.advise.space:rdu_space",
        ),
        Platform(
            "ipu",
            "dabench.perfmodel.ipu:predict",
            {"poptorch": "dabench.backends.ipu:PoptorchBackend"},
            formats=("popvision_json",),
            pipeline_grad_accum=True,
            sweep="ipu_deploy",
            space="dabench.advise.space:ipu_space",
        ),
    )
}

_UNKNOWN = Platform("", "", {})  #: what an unknown arch is asked for: no parts, no special case


def load(path: str) -> Any:
    """The object ``module:attr`` names, imported now."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def platform(arch: str | None) -> Platform:
    """``arch``'s record; an unknown arch gets an empty one (no model, no backend, no special case)."""
    return PLATFORMS.get(str(arch), _UNKNOWN)


def known(arch: str, field_: str = "hardware.arch") -> Platform:
    """``arch``'s record, or ConfigError naming ``field_``, the value and the valid names."""
    if arch not in PLATFORMS:
        raise ConfigError(field_, arch, f"one of {', '.join(PLATFORMS)}")
    return PLATFORMS[arch]


def names() -> tuple[str, ...]:
    return tuple(PLATFORMS)


def accelerators() -> tuple[str, ...]:
    """Every platform but this machine's CPU (what ``dabench advise`` searches by default)."""
    return tuple(name for name, p in PLATFORMS.items() if not p.host_cpu)


def backend_path(backend: str) -> str | None:
    """The Backend class path of ``hardware.backend`` = ``backend``, or None."""
    return next((p.backends[backend] for p in PLATFORMS.values() if backend in p.backends), None)


def backend_names() -> list[str]:
    return sorted(b for p in PLATFORMS.values() for b in p.backends)


def on_host_cpu(backend: str) -> bool:
    """Whether ``hardware.backend`` = ``backend`` runs on this machine's CPU and memory."""
    return any(backend in p.host_backends for p in PLATFORMS.values())


def arch_of_format(fmt: str) -> str | None:
    """The platform whose model prices an ingested artifact of format ``fmt``."""
    return next((p.name for p in PLATFORMS.values() if fmt in p.formats), None)


def device_name(arch: str) -> str | None:
    """This machine's device of ``arch`` (its CPU model, its GPU), or None where the config names it."""
    path = platform(arch).device_name
    return load(path)() if path else None
