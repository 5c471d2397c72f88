"""Build a :class:`~dabench.config.sections.RunConfig` from a composed config mapping, or raise
:class:`~dabench.core.status.ConfigError`; each field is checked by its spec, the builders here add
the rules across fields (divisibility, sums, placement; docs/config.md)."""

from __future__ import annotations

from typing import Any, Mapping

from dabench.config.check import check_section, check_value
from dabench.config.fields import specs
from dabench.config.files import hardware_preset
from dabench.config.paths import CONF_DIR
from dabench.config.schema import check_keys
from dabench.config.sections import (
    FP8,
    BandConfig,
    HardwareSpec,
    ModelConfig,
    ParallelConfig,
    PrecisionConfig,
    RunConfig,
    RunSettings,
    TrackingConfig,
)
from dabench.core.placement import Placement
from dabench.core.platforms import platform
from dabench.core.status import ConfigError


def build_model(section: Mapping[str, Any]) -> ModelConfig:
    model = ModelConfig(**check_section(ModelConfig, section, "model"))
    if model.cross_attention_layers > model.n_layers:
        raise ConfigError(
            "model.cross_attention_layers",
            model.cross_attention_layers,
            f"must be between 0 and model.n_layers={model.n_layers}",
        )
    if model.head_tokens > model.seq_len:
        raise ConfigError(
            "model.head_tokens", model.head_tokens, f"must be between 0 (all) and model.seq_len={model.seq_len}"
        )
    if model.hidden_size % model.n_heads:
        raise ConfigError(
            "model.hidden_size",
            model.hidden_size,
            f"must be divisible by model.n_heads={model.n_heads} "
            f"(e.g. {model.n_heads * max(1, round(model.hidden_size / model.n_heads))})",
        )
    if model.n_heads % model.kv_heads:
        raise ConfigError(
            "model.n_kv_heads", model.n_kv_heads, f"must be 1 to model.n_heads={model.n_heads} and divide it"
        )
    return model


def build_parallel(section: Mapping[str, Any], model: ModelConfig) -> ParallelConfig:
    p = "parallel"
    values = check_section(ParallelConfig, section, p)
    strategy, degree, replicas = values["strategy"], values["degree"], values["replicas"]
    if values.pop("placement") is not None and strategy != "pp":  # under pp, apply_placement applied it
        raise ConfigError(f"{p}.placement", section.get("placement"), "only applies to parallel=pp")
    if strategy == "none" and degree != 1:
        raise ConfigError(f"{p}.degree", degree, "must be 1 when parallel.strategy=none (pick parallel=dp|tp|pp)")
    if strategy in ("dp", "fsdp") and replicas != 1:
        raise ConfigError(f"{p}.replicas", replicas, f"must be 1 for parallel={strategy} (use parallel.degree)")
    if strategy == "tp" and model.kv_heads % degree:  # whole heads per rank (kv_heads divides n_heads)
        heads = f"model.{'n_kv_heads' if model.n_kv_heads else 'n_heads'}={model.kv_heads}"
        raise ConfigError(f"{p}.degree", degree, f"must divide {heads} for tensor parallelism")
    layers = values["layers_per_stage"]
    if strategy == "pp" and layers is None:
        if model.n_layers < degree:
            raise ConfigError(
                f"{p}.degree", degree, f"must be at most model.n_layers={model.n_layers} for an even split"
            )
        values["layers_per_stage"] = Placement.even(model.n_layers, degree)
    elif strategy == "pp":
        layers_per_stage = values["layers_per_stage"] = Placement(layers)
        if len(layers_per_stage) != degree:
            raise ConfigError(
                f"{p}.layers_per_stage", list(layers_per_stage), f"must have parallel.degree={degree} entries"
            )
        if sum(layers_per_stage) != model.n_layers:
            raise ConfigError(
                f"{p}.layers_per_stage",
                list(layers_per_stage),
                f"must sum to model.n_layers={model.n_layers} (sums to {sum(layers_per_stage)})",
            )
    elif layers is not None:
        raise ConfigError(f"{p}.layers_per_stage", list(layers), "only applies to parallel=pp")
    return ParallelConfig(**values)


def build_precision(section: Mapping[str, Any]) -> PrecisionConfig:
    precision = PrecisionConfig(**check_section(PrecisionConfig, section, "precision"))
    if precision.autocast and precision.param_dtype != "fp32":
        raise ConfigError(
            "precision.param_dtype",
            precision.param_dtype,
            "must be fp32 when precision.autocast=true (fp32 master weights)",
        )
    return precision


def default_grad_accum(cfg: Mapping[str, Any]) -> int:
    """A null ``run.grad_accum``'s value: 1, or 2p - 1 on a platform with ``pipeline_grad_accum``
    pipelined over p stages (PopTorch's minimum; docs/config.md)."""
    hardware, parallel = cfg.get("hardware"), cfg.get("parallel")
    if not (
        isinstance(hardware, Mapping)
        and platform(hardware.get("arch")).pipeline_grad_accum
        and isinstance(parallel, Mapping)
        and parallel.get("strategy") == "pp"
    ):
        return 1
    degree = parallel.get("degree")
    return 2 * degree - 1 if isinstance(degree, int) and not isinstance(degree, bool) and degree > 1 else 1


def apply_placement(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``cfg`` with ``parallel.placement`` applied (``layers_per_stage``, ``degree``,
    ``model.n_layers``) and a null ``run.grad_accum`` defaulted: the parameters that run."""
    out = dict(cfg)
    parallel = out.get("parallel")
    if (
        isinstance(parallel, Mapping)
        and parallel.get("placement") is not None
        and parallel.get("strategy", "none") == "pp"
    ):
        placed = check_value(specs(ParallelConfig)["placement"], parallel["placement"], "parallel.placement")
        given = parallel.get("layers_per_stage")
        if given is not None and (not isinstance(given, (list, tuple)) or tuple(given) != placed):
            raise ConfigError(
                "parallel.layers_per_stage",
                given,
                f"conflicts with parallel.placement={parallel['placement']!r}; set only one of them",
            )
        out["parallel"] = {**parallel, "layers_per_stage": list(placed), "degree": placed.stages}
        if isinstance(out.get("model"), Mapping):
            out["model"] = {**out["model"], "n_layers": placed.n_layers}
    run = out.get("run")
    if isinstance(run, Mapping) and run.get("grad_accum") is None:
        out["run"] = {**run, "grad_accum": default_grad_accum(out)}
    return out


def build_run_config(cfg: Mapping[str, Any]) -> RunConfig:
    """Validate a composed config mapping (a resolved plain dict) into a :class:`RunConfig`."""
    for group in ("model", "hardware", "precision"):
        if not isinstance(cfg.get(group), Mapping):
            raise ConfigError(group, cfg.get(group), f"the config group {group}/ must be selected")
    check_keys(cfg)
    cfg = apply_placement(cfg)
    model = build_model(cfg["model"])
    hardware = HardwareSpec(**check_section(HardwareSpec, cfg["hardware"], "hardware"))
    backends = platform(hardware.arch).backends
    if hardware.backend not in backends:
        raise ConfigError(
            "hardware.backend", hardware.backend, f"for arch {hardware.arch}: one of {', '.join(backends)}"
        )
    precision = build_precision(cfg["precision"])
    if precision.name not in hardware.precisions:
        reason = f"hardware={hardware.name} supports {', '.join(hardware.precisions)}"
        if precision.name == FP8:
            reason += f"; FP8 matrix units: hardware={', '.join(fp8_presets())}"
        raise ConfigError("precision", precision.name, reason)
    return RunConfig(
        model=model,
        hardware=hardware,
        parallel=build_parallel(_section(cfg, "parallel"), model),
        precision=precision,
        run=_optional(RunSettings, cfg, "run"),
        tracking=_optional(TrackingConfig, cfg, "tracking"),
        band=_optional(BandConfig, cfg, "band"),
    )


def fp8_presets() -> list[str]:
    """The hardware presets that list ``fp8`` in their precisions (their own, else inherited)."""
    return sorted(
        p.stem for p in (CONF_DIR / "hardware").glob("*.yaml") if FP8 in hardware_preset(p).get("precisions", ())
    )


def _section(cfg: Mapping[str, Any], name: str) -> Any:
    """A section that may be left out (null or absent: all defaults)."""
    value = cfg.get(name)
    return {} if value is None else value


def _optional(cls: type, cfg: Mapping[str, Any], name: str) -> Any:
    return cls(**check_section(cls, _section(cfg, name), name))


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings to dot keys (lists stay values): {'a': {'b': 1}} -> {'a.b': 1}."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
