"""Typed run configuration, validated before anything runs.

Hydra composes the YAML groups under ``conf/`` into one mapping; :func:`build_run_config` turns
that mapping into a frozen :class:`RunConfig` or raises :class:`~dabench.status.ConfigError`
naming the field, the value and what would be valid. Nothing downstream reads raw Hydra config.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from dabench.placement import Placement
from dabench.status import ConfigError

PRECISIONS = ("fp32", "fp16", "bf16", "mixed")
MODES = ("auto", "measure", "predict", "validate")
STRATEGIES = ("none", "dp", "tp", "pp")
PP_SCHEDULES = ("gpipe", "1f1b")

#: bytes per element of each dtype name used in configs
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


@dataclass(frozen=True)
class ModelConfig:
    """A GPT-2 style decoder stack. ``ffn_hidden = ffn_size or ffn_mult * hidden_size``.

    Variants the op graph prices (dabench/workload/opgraph.py), all off by default (GPT-2):
    ``ffn_type`` gelu (two matrices) or swiglu (gate, up, down: LLaMA); ``position`` learned (a
    table of seq_len x hidden) or rotary (no table; GPT-J, LLaMA); ``tie_embeddings`` (the LM head
    reuses the token table: GPT-2, BERT); ``cross_attention_layers`` of the ``n_layers`` blocks
    also attend to an encoder output (an encoder-decoder of L + L layers is n_layers = 2L with L
    cross-attention layers); ``head_tokens`` positions per sequence reach the LM head (0 = all;
    BERT's MLM head sees its masked positions only).
    """

    name: str
    n_layers: int
    hidden_size: int
    n_heads: int
    seq_len: int
    vocab_size: int
    ffn_mult: int = 4
    ffn_size: int = 0
    ffn_type: str = "gelu"
    position: str = "learned"
    tie_embeddings: bool = False
    cross_attention_layers: int = 0
    head_tokens: int = 0

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.n_heads

    @property
    def ffn_hidden(self) -> int:
        return self.ffn_size or self.ffn_mult * self.hidden_size


@dataclass(frozen=True)
class MemoryLevel:
    """One level of the memory hierarchy. Capacity in bytes, bandwidth in bytes/s (None = unknown
    or calibrated at run time). ``scope`` is ``chip`` (per chip) or ``system``."""

    name: str
    capacity_bytes: float | None
    bandwidth_Bps: float | None
    scope: str = "chip"


@dataclass(frozen=True)
class ComputeUnits:
    """A kind of compute unit and how many one chip has (None = detected at run time)."""

    kind: str
    count: int | None


@dataclass(frozen=True)
class Link:
    """A chip-to-chip link. Bandwidth in bytes/s per direction, latency in seconds. ``scope`` is
    ``intra`` (within a node/machine) or ``inter`` (between machines)."""

    name: str
    bandwidth_Bps: float
    latency_s: float
    scope: str = "intra"


@dataclass(frozen=True)
class HardwareSpec:
    """A target system as data: ``peak_flops`` maps precision -> FLOP/s per chip (None = calibrate),
    ``options`` holds architecture-specific knobs (device iterations, compile mode, ...)."""

    name: str
    arch: str
    mode: str
    backend: str
    peak_flops: Mapping[str, float | None]
    memory: tuple[MemoryLevel, ...]
    compute_units: tuple[ComputeUnits, ...]
    links: tuple[Link, ...] = ()
    precisions: tuple[str, ...] = PRECISIONS
    chips_per_node: int = 1
    python: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def memory_level(self, name: str) -> MemoryLevel:
        for level in self.memory:
            if level.name == name:
                return level
        raise KeyError(f"hardware {self.name} has no memory level {name!r}")

    def units(self, kind: str) -> int | None:
        for unit in self.compute_units:
            if unit.kind == kind:
                return unit.count
        raise KeyError(f"hardware {self.name} has no compute unit kind {kind!r}")

    def link(self, scope: str) -> Link | None:
        for candidate in self.links:
            if candidate.scope == scope:
                return candidate
        return None


@dataclass(frozen=True)
class ParallelConfig:
    """How the work is spread over chips.

    ``strategy`` is none, dp, tp or pp with ``degree`` chips; ``replicas`` data-parallel copies of
    a tp/pp group (IPU replication factor), so chips = degree * replicas. ``layers_per_stage``
    (pp only) lists decoder layers per stage; stage 0 also holds the embedding and, unless
    ``head_on_last``, the LM head. ``micro_batches`` is the pipeline's micro-batch count.
    """

    strategy: str = "none"
    degree: int = 1
    replicas: int = 1
    layers_per_stage: Placement | None = None  #: parsed once, see dabench.placement
    micro_batches: int = 1
    schedule: str = "gpipe"
    head_on_last: bool = True
    init_method: str | None = None
    timeout_s: float = 300.0

    @property
    def n_chips(self) -> int:
        return self.degree * self.replicas


@dataclass(frozen=True)
class PrecisionConfig:
    """Numerical precision. ``param_dtype`` is the stored weight dtype, ``compute_dtype`` the
    arithmetic dtype; ``mixed`` is autocast to ``compute_dtype`` over fp32 master weights."""

    name: str
    param_dtype: str
    compute_dtype: str
    autocast: bool

    @property
    def compute_bytes(self) -> int:
        return DTYPE_BYTES[self.compute_dtype]

    @property
    def param_bytes(self) -> int:
        return DTYPE_BYTES[self.param_dtype]


@dataclass(frozen=True)
class RunSettings:
    """Batch (micro-batch per chip and step), step counts, seed and CPU threads (None = torch's
    default). ``grad_accum`` micro-batches make one optimizer step."""

    batch_size: int = 4
    grad_accum: int = 1
    warmup_steps: int = 2
    timed_steps: int = 5
    seed: int = 0
    threads: int | None = None
    profile_subtasks: bool = True
    lr: float = 1e-4
    allow_oversubscribe: bool = False  #: measured parallel runs may start more ranks than cores


@dataclass(frozen=True)
class TrackingConfig:
    """MLflow: ``uri`` None = $MLFLOW_TRACKING_URI or SQLite under <launch dir>/mlruns/."""

    enabled: bool = True
    uri: str | None = None
    experiment: str = "dabench"
    run_name: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    parent_run_id: str | None = None  #: the MLflow parent (a study's), set by the sweeper per job
    timeout_s: float = 30.0  #: bound on one call to a tracking server or database (seconds)
    system_metrics_interval_s: float = 10.0  #: MLflow's system-metrics sampler on measured runs (s; 0 = off)


@dataclass(frozen=True)
class RunConfig:
    model: ModelConfig
    hardware: HardwareSpec
    parallel: ParallelConfig
    precision: PrecisionConfig
    run: RunSettings
    tracking: TrackingConfig

    @property
    def data_copies(self) -> int:
        """Data-parallel copies of the model: dp degree, times replicas of a tp/pp group."""
        return self.parallel.replicas * (self.parallel.degree if self.parallel.strategy == "dp" else 1)

    @property
    def samples_per_step(self) -> int:
        """Samples consumed by one optimizer step over all chips:
        micro-batch * grad_accum * data copies."""
        return self.run.batch_size * self.run.grad_accum * self.data_copies

    @property
    def tokens_per_step(self) -> int:
        return self.samples_per_step * self.model.seq_len

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _register_schema() -> None:
    """Tell the config schema (dabench/schema.py: unknown keys, ranges) the typed sections."""
    from dabench.schema import register_sections

    register_sections({"model": ModelConfig, "hardware": HardwareSpec, "parallel": ParallelConfig,
                       "precision": PrecisionConfig, "run": RunSettings, "tracking": TrackingConfig})


_register_schema()


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
    :meth:`dabench.placement.Placement.parse`): "0 4 4 4" -> (0, 4, 4, 4)."""
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


def apply_placement(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a composed config in which ``parallel.placement`` (when set) has filled in what it
    implies: ``parallel.layers_per_stage`` (the parsed list), ``parallel.degree`` (its length) and
    ``model.n_layers`` (its sum). Call it before naming or logging a run so that the recorded
    parameters are the ones that ran; :func:`build_run_config` applies it too."""
    out = dict(cfg)
    parallel = out.get("parallel")
    if not isinstance(parallel, Mapping) or parallel.get("placement") is None:
        return out
    if parallel.get("strategy", "none") != "pp":
        return out  # build_parallel refuses it with a clear message
    out["parallel"], layers = _placed_section(parallel)
    if isinstance(out.get("model"), Mapping):
        out["model"] = {**out["model"], "n_layers": layers.n_layers}
    return out


def build_run_config(cfg: Mapping[str, Any]) -> RunConfig:
    """Validate a composed config mapping (a plain dict, or an OmegaConf container converted with
    ``OmegaConf.to_container(cfg, resolve=True)``) into a :class:`RunConfig`."""
    for group in ("model", "hardware", "precision"):
        if not isinstance(cfg.get(group), Mapping):
            raise ConfigError(group, cfg.get(group), f"the config group {group}/ must be selected")
    from dabench.schema import validate  # unknown keys, types and ranges (docs/config.md)

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
