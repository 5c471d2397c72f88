"""Build a :class:`~dabench.config.sections.RunConfig` from a composed config mapping, or raise
:class:`~dabench.core.status.ConfigError` naming the field, the value and what would be valid.
Nothing downstream reads raw Hydra config.
"""

from __future__ import annotations

from typing import Any, Mapping

from dabench.config.sections import (
    ComputeUnits,
    DTYPE_BYTES,
    HardwareSpec,
    Link,
    MODES,
    MemoryLevel,
    ModelConfig,
    PP_SCHEDULES,
    PRECISIONS,
    ParallelConfig,
    PrecisionConfig,
    RunConfig,
    RunSettings,
    STRATEGIES,
    TrackingConfig,
)
from dabench.core.placement import Placement
from dabench.core.status import ConfigError


# ----------------------------------------------------------------------------- validation helpers


def _get(section: Mapping[str, Any], key: str, prefix: str, default: Any = ...) -> Any:
    if key in section and section[key] is not None:
        return section[key]
    if default is ...:
        raise ConfigError(f"{prefix}.{key}", None, "this field is required")
    return default


def _positive_int(section: Mapping[str, Any], key: str, prefix: str, default: Any = ...) -> int:
    value = _get(section, key, prefix, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{prefix}.{key}", value, "must be a positive integer")
    return value


def _nonneg_int(section: Mapping[str, Any], key: str, prefix: str, default: Any = ...) -> int:
    value = _get(section, key, prefix, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{prefix}.{key}", value, "must be a non-negative integer")
    return value


def _choice(section: Mapping[str, Any], key: str, prefix: str, choices: tuple[str, ...], default: Any = ...) -> str:
    value = _get(section, key, prefix, default)
    if value not in choices:
        raise ConfigError(f"{prefix}.{key}", value, f"must be one of {', '.join(choices)}")
    return value


def _optional_number(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(name, value, "must be a positive number or null")
    return float(value)


# ----------------------------------------------------------------------------- section builders


def build_model(section: Mapping[str, Any]) -> ModelConfig:
    p = "model"
    model = ModelConfig(
        name=str(_get(section, "name", p)),
        n_layers=_positive_int(section, "n_layers", p),
        hidden_size=_positive_int(section, "hidden_size", p),
        n_heads=_positive_int(section, "n_heads", p),
        seq_len=_positive_int(section, "seq_len", p),
        vocab_size=_positive_int(section, "vocab_size", p),
        ffn_mult=_positive_int(section, "ffn_mult", p, 4),
        ffn_size=_positive_int(section, "ffn_size", p, 0) if section.get("ffn_size") else 0,
        ffn_type=_choice(section, "ffn_type", p, ("gelu", "swiglu"), "gelu"),
        position=_choice(section, "position", p, ("learned", "rotary"), "learned"),
        tie_embeddings=bool(section.get("tie_embeddings", False)),
        cross_attention_layers=int(section.get("cross_attention_layers") or 0),
        head_tokens=int(section.get("head_tokens") or 0),
    )
    if not 0 <= model.cross_attention_layers <= model.n_layers:
        raise ConfigError("model.cross_attention_layers", model.cross_attention_layers,
                          f"must be between 0 and model.n_layers={model.n_layers}")
    if not 0 <= model.head_tokens <= model.seq_len:
        raise ConfigError("model.head_tokens", model.head_tokens, f"must be between 0 (all) and model.seq_len={model.seq_len}")
    if model.hidden_size % model.n_heads:
        raise ConfigError(
            "model.hidden_size",
            model.hidden_size,
            f"must be divisible by model.n_heads={model.n_heads} "
            f"(e.g. {model.n_heads * max(1, round(model.hidden_size / model.n_heads))})",
        )
    return model


def build_hardware(section: Mapping[str, Any]) -> HardwareSpec:
    p = "hardware"
    peak = dict(_get(section, "peak_flops", p, {}))
    for precision, value in peak.items():
        _optional_number(value, f"{p}.peak_flops.{precision}")
    memory = tuple(
        MemoryLevel(
            name=str(_get(level, "name", f"{p}.memory[{i}]")),
            capacity_bytes=_optional_number(level.get("capacity_bytes"), f"{p}.memory[{i}].capacity_bytes"),
            bandwidth_Bps=_optional_number(level.get("bandwidth_Bps"), f"{p}.memory[{i}].bandwidth_Bps"),
            scope=str(level.get("scope", "chip")),
        )
        for i, level in enumerate(_get(section, "memory", p))
    )
    units = tuple(
        ComputeUnits(kind=str(_get(unit, "kind", f"{p}.compute_units[{i}]")), count=unit.get("count"))
        for i, unit in enumerate(_get(section, "compute_units", p))
    )
    links = tuple(
        Link(
            name=str(_get(link, "name", f"{p}.links[{i}]")),
            bandwidth_Bps=float(_get(link, "bandwidth_Bps", f"{p}.links[{i}]")),
            latency_s=float(_get(link, "latency_s", f"{p}.links[{i}]")),
            scope=_choice(link, "scope", f"{p}.links[{i}]", ("intra", "inter"), "intra"),
        )
        for i, link in enumerate(section.get("links") or ())
    )
    precisions = tuple(section.get("precisions") or PRECISIONS)
    for name in precisions:
        if name not in PRECISIONS:
            raise ConfigError(f"{p}.precisions", name, f"must be among {', '.join(PRECISIONS)}")
    return HardwareSpec(
        name=str(_get(section, "name", p)),
        arch=str(_get(section, "arch", p)),
        mode=_choice(section, "mode", p, MODES, "auto"),
        backend=str(_get(section, "backend", p)),
        peak_flops=peak,
        memory=memory,
        compute_units=units,
        links=links,
        precisions=precisions,
        chips_per_node=_positive_int(section, "chips_per_node", p, 1),
        python=section.get("python"),
        options=dict(section.get("options") or {}),
    )


def parse_placement(value: Any) -> Placement:
    """Decoder layers per pipeline stage from ``parallel.placement`` (see
    :meth:`dabench.core.placement.Placement.parse`): "0 4 4 4" -> (0, 4, 4, 4)."""
    return Placement.parse(value)


def _placed_section(section: Mapping[str, Any]) -> tuple[Mapping[str, Any], Placement | None]:
    """(section with ``layers_per_stage`` and ``degree`` filled in from ``placement``, the parsed
    placement); the one place a pp placement is turned into what it implies."""
    value = section.get("placement")
    if value is None or section.get("strategy", "none") != "pp":
        return section, None
    placed = Placement.parse(value)
    given = section.get("layers_per_stage")
    if given is not None and tuple(given) != placed:
        raise ConfigError("parallel.layers_per_stage", list(given),
                          f"conflicts with parallel.placement={value!r}; set only one of them")
    return {**section, "layers_per_stage": list(placed), "degree": placed.stages}, placed


def build_parallel(section: Mapping[str, Any], model: ModelConfig) -> ParallelConfig:
    p = "parallel"
    strategy = _choice(section, "strategy", p, STRATEGIES, "none")
    degree = _positive_int(section, "degree", p, 1)
    placement = section.get("placement")
    if placement is not None:
        # the placement defines the stages (parallel.degree = its length) and, through
        # build_run_config, the layer count (model.n_layers = its sum)
        if strategy != "pp":
            raise ConfigError(f"{p}.placement", placement, "only applies to parallel=pp")
        section, placed = _placed_section(section)
        degree = placed.stages
    replicas = _positive_int(section, "replicas", p, 1)
    micro_batches = _positive_int(section, "micro_batches", p, 1)
    schedule = _choice(section, "schedule", p, PP_SCHEDULES, "gpipe")
    if strategy == "none" and degree != 1:
        raise ConfigError(f"{p}.degree", degree, "must be 1 when parallel.strategy=none (pick parallel=dp|tp|pp)")
    if strategy == "dp" and replicas != 1:
        raise ConfigError(f"{p}.replicas", replicas, "must be 1 for parallel=dp (use parallel.degree)")
    if strategy == "tp" and model.n_heads % degree:
        raise ConfigError(f"{p}.degree", degree, f"must divide model.n_heads={model.n_heads} for tensor parallelism")
    layers = section.get("layers_per_stage")
    layers_per_stage: Placement | None = None
    if strategy == "pp":
        if layers is None:
            if model.n_layers < degree:
                raise ConfigError(f"{p}.degree", degree, f"must be at most model.n_layers={model.n_layers} for an even split")
            layers_per_stage = Placement.even(model.n_layers, degree)
        else:
            layers_per_stage = Placement(layers)
            if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in layers_per_stage):
                raise ConfigError(f"{p}.layers_per_stage", list(layers_per_stage), "entries must be non-negative integers")
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
    timeout = section.get("timeout_s", 300.0)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{p}.timeout_s", timeout, "must be a positive number of seconds")
    return ParallelConfig(
        strategy=strategy,
        degree=degree,
        replicas=replicas,
        layers_per_stage=layers_per_stage,
        micro_batches=micro_batches,
        schedule=schedule,
        head_on_last=bool(section.get("head_on_last", True)),
        init_method=section.get("init_method"),
        timeout_s=float(timeout),
    )


def build_precision(section: Mapping[str, Any]) -> PrecisionConfig:
    p = "precision"
    name = _choice(section, "name", p, PRECISIONS)
    param = _choice(section, "param_dtype", p, tuple(DTYPE_BYTES), "fp32")
    compute = _choice(section, "compute_dtype", p, tuple(DTYPE_BYTES), param)
    autocast = bool(section.get("autocast", False))
    if autocast and param != "fp32":
        raise ConfigError(f"{p}.param_dtype", param, "must be fp32 when precision.autocast=true (fp32 master weights)")
    return PrecisionConfig(name=name, param_dtype=param, compute_dtype=compute, autocast=autocast)


def build_run(section: Mapping[str, Any]) -> RunSettings:
    p = "run"
    threads = section.get("threads")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ConfigError(f"{p}.threads", threads, "must be a positive integer or null")
    lr = section.get("lr", 1e-4)
    if not isinstance(lr, (int, float)) or lr <= 0:
        raise ConfigError(f"{p}.lr", lr, "must be a positive number")
    return RunSettings(
        batch_size=_positive_int(section, "batch_size", p, 4),
        grad_accum=_positive_int(section, "grad_accum", p, 1),
        warmup_steps=_nonneg_int(section, "warmup_steps", p, 2),
        timed_steps=_positive_int(section, "timed_steps", p, 5),
        seed=_nonneg_int(section, "seed", p, 0),
        threads=threads,
        profile_subtasks=bool(section.get("profile_subtasks", True)),
        lr=float(lr),
        allow_oversubscribe=bool(section.get("allow_oversubscribe", False)),
    )


def build_tracking(section: Mapping[str, Any]) -> TrackingConfig:
    return TrackingConfig(
        enabled=bool(section.get("enabled", True)),
        uri=section.get("uri"),
        experiment=str(section.get("experiment") or "dabench"),
        run_name=section.get("run_name"),
        tags={str(k): str(v) for k, v in (section.get("tags") or {}).items()},
        parent_run_id=str(section["parent_run_id"]) if section.get("parent_run_id") else None,
        timeout_s=float(section.get("timeout_s") or 30.0),
        system_metrics_interval_s=_interval(section.get("system_metrics_interval_s", 10.0)),
    )


def _interval(value: Any) -> float:
    """``tracking.system_metrics_interval_s``: seconds >= 0 (0 = no system metrics)."""
    try:
        seconds = float(value if value is not None else 0.0)
    except (TypeError, ValueError):
        raise ConfigError("tracking.system_metrics_interval_s", value, "must be a number of seconds >= 0 (0 = off)") from None
    if not seconds >= 0:
        raise ConfigError("tracking.system_metrics_interval_s", value, "must be a number of seconds >= 0 (0 = off)")
    return seconds


def default_grad_accum(cfg: Mapping[str, Any]) -> int:
    """``run.grad_accum`` when the config leaves it null (conf/config.yaml): 1, except on a
    pipelined IPU (``hardware.arch=ipu``, ``parallel=pp`` over p stages): PopTorch trains a pipeline
    over p IPUs in 2p - 1 stages (forward and backward) and refuses a gradient accumulation
    (``Training.gradientAccumulation``, the pipeline's micro-batches per step) below that, so the
    default is the fewest it accepts, 2p - 1 (dabench.backends.ipu and dabench.perfmodel.ipu check
    the same bound). It follows every depth: ``parallel.degree`` or a placement's length."""
    hardware, parallel = cfg.get("hardware"), cfg.get("parallel")
    if not (isinstance(hardware, Mapping) and hardware.get("arch") == "ipu" and isinstance(parallel, Mapping)
            and parallel.get("strategy") == "pp"):
        return 1
    degree = parallel.get("degree")
    return 2 * degree - 1 if isinstance(degree, int) and not isinstance(degree, bool) and degree > 1 else 1


def apply_placement(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a composed config in which ``parallel.placement`` (when set) has filled in what it
    implies: ``parallel.layers_per_stage`` (the parsed list), ``parallel.degree`` (its length) and
    ``model.n_layers`` (its sum); and a null ``run.grad_accum`` its default
    (:func:`default_grad_accum`, after the placement has set the depth). Call it before naming or
    logging a run so that the recorded parameters are the ones that ran; :func:`build_run_config`
    applies it too."""
    out = dict(cfg)
    parallel = out.get("parallel")
    if (isinstance(parallel, Mapping) and parallel.get("placement") is not None
            and parallel.get("strategy", "none") == "pp"):  # (other strategies: build_parallel refuses it)
        out["parallel"], layers = _placed_section(parallel)
        if isinstance(out.get("model"), Mapping):
            out["model"] = {**out["model"], "n_layers": layers.n_layers}
    run = out.get("run")
    if isinstance(run, Mapping) and run.get("grad_accum") is None:
        out["run"] = {**run, "grad_accum": default_grad_accum(out)}
    return out


def build_run_config(cfg: Mapping[str, Any]) -> RunConfig:
    """Validate a composed config mapping (a plain dict, or an OmegaConf container converted with
    ``OmegaConf.to_container(cfg, resolve=True)``) into a :class:`RunConfig`."""
    for group in ("model", "hardware", "precision"):
        if not isinstance(cfg.get(group), Mapping):
            raise ConfigError(group, cfg.get(group), f"the config group {group}/ must be selected")
    from dabench.config.schema import validate  # unknown keys, types and ranges (docs/config.md)

    validate(cfg)
    cfg = apply_placement(cfg)
    model = build_model(cfg["model"])
    hardware = build_hardware(cfg["hardware"])
    precision = build_precision(cfg["precision"])
    if precision.name not in hardware.precisions:
        raise ConfigError(
            "precision", precision.name, f"hardware={hardware.name} supports {', '.join(hardware.precisions)}"
        )
    return RunConfig(
        model=model,
        hardware=hardware,
        parallel=build_parallel(cfg.get("parallel") or {}, model),
        precision=precision,
        run=build_run(cfg.get("run") or {}),
        tracking=build_tracking(cfg.get("tracking") or {}),
    )


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
