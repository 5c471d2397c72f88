"""The typed run configuration: one frozen dataclass per config section (docs/config.md).

Hydra composes the YAML groups under ``conf/`` into one mapping; :func:`build_run_config` turns
that mapping into a frozen :class:`RunConfig` or raises :class:`~dabench.core.status.ConfigError`
naming the field, the value and what would be valid. Nothing downstream reads raw Hydra config.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from dabench.core.placement import Placement

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
    layers_per_stage: Placement | None = None  #: parsed once, see dabench.core.placement
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
    """Tell the config schema (dabench/config/schema.py: unknown keys, ranges) the typed sections."""
    from dabench.config.schema import register_sections

    register_sections({"model": ModelConfig, "hardware": HardwareSpec, "parallel": ParallelConfig,
                       "precision": PrecisionConfig, "run": RunSettings, "tracking": TrackingConfig})


_register_schema()
