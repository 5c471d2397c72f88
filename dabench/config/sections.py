"""The typed run configuration: one frozen dataclass per config section, each field declared with
its type, range, choices and one-line doc (:func:`~dabench.config.fields.field_`); docs/config.md."""

from __future__ import annotations

import typing
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Mapping

from dabench.config.fields import PLACEMENT, Spec, field_
from dabench.core.placement import Placement
from dabench.core.platforms import names
from dabench.core.status import ConfigError


class MissingHardwareData(ConfigError, KeyError):
    """A performance model asked the hardware spec for a level, a unit kind or a number it lacks."""

    __str__ = ConfigError.__str__


PRECISIONS = ("fp32", "fp16", "bf16", "mixed", "fp8")
#: FP8 GEMMs need FP8 matrix units: a preset lists ``fp8`` in its precisions (with its peak) to run it
FP8 = "fp8"
MODES = ("auto", "measure", "predict", "validate")
STRATEGIES = ("none", "dp", "tp", "pp", "fsdp")
SHARDINGS = ("full", "grad_op", "optimizer")
PP_SCHEDULES = ("gpipe", "1f1b")

#: bytes per element of each dtype name used in configs
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
#: beyond any target dabench models: bytes, bytes/s and FLOP/s per chip (catch units mistakes)
HUGE = 1e18


@dataclass(frozen=True)
class ModelConfig:
    """A GPT-2 style decoder stack and the variants the op graph prices (docs/config.md)."""

    name: str = field_(doc="the model's name (run names, reports)")
    n_layers: int = field_(low=1, high=10_000, doc="decoder blocks")
    hidden_size: int = field_(low=1, high=1 << 20, doc="model width; a multiple of n_heads")
    n_heads: int = field_(low=1, high=65_536, doc="attention heads; must divide hidden_size")
    seq_len: int = field_(low=1, high=1 << 22, doc="tokens per sample")
    vocab_size: int = field_(low=1, high=1 << 24, doc="token ids")
    ffn_mult: int = field_(4, low=1, high=64, doc="FFN width / hidden_size")
    ffn_size: int = field_(0, low=0, high=1 << 22, doc="explicit FFN width (0 = ffn_mult x hidden_size)")
    ffn_type: str = field_("gelu", choices=("gelu", "swiglu"), doc="gelu: two matrices; swiglu: gate, up, down (LLaMA)")
    position: str = field_("learned", choices=("learned", "rotary"), doc="learned position table, or rotary (no table)")
    tie_embeddings: bool = field_(False, doc="the LM head reuses the token table (GPT-2, BERT)")
    cross_attention_layers: int = field_(
        0, low=0, high=10_000, doc="blocks that also attend to an encoder output; at most n_layers"
    )
    head_tokens: int = field_(
        0, low=0, high=1 << 22, doc="positions per sequence reaching the LM head: 0 = all; at most seq_len"
    )
    n_kv_heads: int | None = field_(
        None,
        low=1,
        high=65_536,
        doc="key/value heads (grouped-query attention): 1 to n_heads, dividing it; null = n_heads",
    )

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or ``n_heads`` (plain multi-head attention) when null."""
        return self.n_kv_heads or self.n_heads

    @property
    def ffn_hidden(self) -> int:
        return self.ffn_size or self.ffn_mult * self.hidden_size


@dataclass(frozen=True)
class MemoryLevel:
    """One level of the memory hierarchy."""

    name: str = field_(doc="level name (e.g. hbm, sram), as the performance models ask for it")
    capacity_bytes: float | None = field_(low=0, low_open=True, high=HUGE, doc="bytes per chip (null = detected)")
    bandwidth_Bps: float | None = field_(low=0, low_open=True, high=HUGE, doc="bytes/s (null = calibrated)")
    scope: str = field_("chip", choices=("chip", "system"), doc="per chip, or one for the whole system")


@dataclass(frozen=True)
class ComputeUnits:
    """A kind of compute unit and how many one chip has."""

    kind: str = field_(doc="unit kind (e.g. cores, sms, tiles, pes)")
    count: int | None = field_(low=1, high=1 << 30, doc="units per chip (null = detected)")


@dataclass(frozen=True)
class Link:
    """A chip-to-chip link."""

    name: str = field_(doc="link name")
    bandwidth_Bps: float = field_(low=0, low_open=True, high=HUGE, doc="bytes/s per direction")
    latency_s: float = field_(low=0, high=10, doc="seconds per hop")
    scope: str = field_("intra", choices=("intra", "inter"), doc="within a machine, or between machines")


@dataclass(frozen=True)
class HardwareSpec:
    """A target system as data."""

    name: str = field_(doc="the target's name (run names, reports)")
    arch: str = field_(choices=names(), doc="architecture: picks the analytical model, its knobs and backends")
    mode: str = field_("auto", init_default=False, choices=MODES, doc="auto, measure, predict or validate")
    backend: str = field_(doc="the backend that measures (dabench/backends)")
    peak_flops: Mapping[str, float | None] = field_(
        {},
        init_default=False,
        item=Spec("number", low=0, low_open=True, high=HUGE, nullable=True),
        doc="precision -> FLOP/s per chip (null = calibrated)",
    )
    memory: tuple[MemoryLevel, ...] = field_(min_items=1, doc="the memory hierarchy, one item per level")
    compute_units: tuple[ComputeUnits, ...] = field_(min_items=1, doc="compute units, one item per kind")
    links: tuple[Link, ...] = field_((), doc="chip-to-chip links, one item per scope")
    precisions: tuple[str, ...] = field_(
        tuple(p for p in PRECISIONS if p != FP8),
        min_items=1,
        item=Spec("choice", choices=PRECISIONS),
        doc="precisions the target runs (fp8 only where listed, with peak_flops.fp8)",
    )
    chips_per_node: int = field_(1, low=1, high=4096, doc="chips in one machine")
    python: str | None = field_(
        None, max_len=4096, empty_is_null=True, doc="interpreter for runner-isolated backends (null = this one)"
    )
    options: Mapping[str, Any] = field_(
        {}, item=Spec("any"), doc="architecture knobs, typed per arch by dabench/perfmodel/knobs"
    )
    constants: str = field_(
        "published",
        max_len=4096,
        doc="constant set the prediction uses: published (the shipped one), the NAME of a "
        "set written by dabench fit --from-mlflow, or the path of a set's JSON file "
        "(docs/fitting.md)",
    )

    def memory_level(self, name: str) -> MemoryLevel:
        return self._item("memory", name)

    def units(self, kind: str) -> int | None:
        return self._item("compute_units", kind).count

    def capacity(self, level: str) -> float:
        return float(self._needed("memory", level, "capacity_bytes"))

    def bandwidth(self, level: str) -> float:
        return float(self._needed("memory", level, "bandwidth_Bps"))

    def unit_count(self, kind: str) -> int:
        return int(self._needed("compute_units", kind, "count"))

    def _item(self, where: str, name: str) -> Any:
        """The ``hardware.<where>`` item called ``name``; MissingHardwareData naming the ones there."""
        items = getattr(self, where)
        names = [getattr(item, "name", None) or getattr(item, "kind", None) for item in items]
        if name not in names:
            what = "level" if where == "memory" else "kind"
            raise MissingHardwareData(
                f"hardware.{where}", names, f"has no {what} {name!r}, which the {self.arch} model needs"
            )
        return items[names.index(name)]

    def _needed(self, where: str, name: str, attr: str) -> Any:
        """``attr`` of the ``hardware.<where>`` item ``name``; MissingHardwareData when absent or null."""
        item = self._item(where, name)
        if getattr(item, attr) is None:
            raise MissingHardwareData(
                f"hardware.{where}[{getattr(self, where).index(item)}].{attr}",
                None,
                f"must be a number: the {self.arch} model needs it "
                "(null = detected at run time, for targets that measure)",
            )
        return getattr(item, attr)

    def link(self, scope: str) -> Link | None:
        return next((candidate for candidate in self.links if candidate.scope == scope), None)


@dataclass(frozen=True)
class ParallelConfig:
    """How the work is spread over chips: ``degree * replicas`` of them."""

    #: keys read from the config but not kept: what they imply is (see dabench.config.build)
    INPUTS: ClassVar[dict[str, Spec]] = {
        "placement": Spec(
            PLACEMENT,
            nullable=True,
            default=None,
            doc='pp only: layers per stage as a string ("0 4 4 4", "0 1x8 0x7") or list; '
            "sets layers_per_stage, degree and model.n_layers",
        )
    }

    strategy: str = field_(
        "none", choices=STRATEGIES, doc="none, dp (data), tp (tensor), pp (pipeline) or fsdp (sharded data)"
    )
    degree: int = field_(1, low=1, high=4096, doc="chips in the tp/pp group or dp copies")
    replicas: int = field_(1, low=1, high=4096, doc="copies of a tp/pp group")
    layers_per_stage: Placement | None = field_(
        None,
        kind="list",
        item=Spec("integer", low=0, high=10_000),
        doc="pp only: decoder layers per stage (null = as even as possible)",
    )
    micro_batches: int = field_(1, low=1, high=1 << 16, doc="pipeline micro-batches per step")
    schedule: str = field_("gpipe", choices=PP_SCHEDULES, doc="pipeline schedule")
    sharding: str = field_(
        "full",
        choices=SHARDINGS,
        doc="fsdp: what each chip keeps 1/degree of: full = weights, gradients and optimizer state "
        "(ZeRO-3, FULL_SHARD), grad_op = gradients and optimizer state (ZeRO-2, SHARD_GRAD_OP), "
        "optimizer = optimizer state (ZeRO-1)",
    )
    head_on_last: bool = field_(True, doc="pp: the LM head on the last stage (else on stage 0)")
    init_method: str | None = field_(
        None, max_len=4096, empty_is_null=True, doc="torch.distributed rendezvous (null = env:// on 127.0.0.1)"
    )
    timeout_s: float = field_(300.0, low=1e-3, high=7 * 86400, doc="seconds before a parallel job is killed")

    @property
    def n_chips(self) -> int:
        return self.degree * self.replicas


@dataclass(frozen=True)
class PrecisionConfig:
    """Numerical precision."""

    name: str = field_(
        choices=PRECISIONS,
        doc="the precision's name; fp8: the decoder blocks' GEMMs in FP8 (E4M3 forward, E5M2 gradients, "
        "per-tensor scales from an amax history) over bf16 weights and activations",
    )
    param_dtype: str = field_("fp32", choices=tuple(DTYPE_BYTES), doc="stored weight dtype")
    compute_dtype: str = field_(
        "fp32", choices=tuple(DTYPE_BYTES), same_as="param_dtype", doc="arithmetic dtype (absent = param_dtype)"
    )
    autocast: bool = field_(False, doc="autocast to compute_dtype over fp32 master weights (needs param_dtype fp32)")

    @property
    def compute_bytes(self) -> int:
        return DTYPE_BYTES[self.compute_dtype]

    @property
    def param_bytes(self) -> int:
        return DTYPE_BYTES[self.param_dtype]


@dataclass(frozen=True)
class RunSettings:
    """Batch, step counts, seed, threads and the limits of a measured run."""

    batch_size: int = field_(4, low=1, high=1 << 20, doc="micro-batch per chip per step")
    grad_accum: int = field_(
        1,
        low=1,
        high=1 << 16,
        doc="micro-batches per optimizer step (null = 1, or 2 x stages - 1 on a pipelined IPU: PopTorch's minimum)",
    )
    warmup_steps: int = field_(2, low=0, high=1_000_000, doc="untimed steps")
    timed_steps: int = field_(5, low=1, high=1_000_000, doc="timed steps")
    seed: int = field_(0, low=0, high=2**63 - 1, doc="random seed")
    threads: int | None = field_(None, low=1, high=4096, doc="CPU threads (null = the CPUs this process may use)")
    remeasure: int = field_(
        2,
        low=0,
        high=10,
        doc="times a disturbed timed window (measured CPU runs) is timed again before the run ends unsteady",
    )
    max_minutes: float = field_(
        30.0, low=0, high=100_000, doc="stop a measured run whose estimate after warm-up exceeds this (0 = no limit)"
    )
    profile_subtasks: bool = field_(True, doc="extra steps after timing for per-layer (subtask) times")
    lr: float = field_(1e-4, low=0.0, low_open=True, high=10.0, doc="learning rate")
    allow_oversubscribe: bool = field_(False, doc="measured parallel runs may start more ranks than cores")
    plots: str = field_(
        "auto",
        choices=("auto", "always", "never"),
        doc="per-run roofline SVG: auto (measured runs only), always or never",
    )


@dataclass(frozen=True)
class TrackingConfig:
    """Where and how the run is recorded in MLflow."""

    enabled: bool = field_(True, doc="record the run in MLflow")
    uri: str | None = field_(
        None,
        max_len=4096,
        empty_is_null=True,
        doc="tracking URI (null = $MLFLOW_TRACKING_URI, else SQLite under mlruns/)",
    )
    experiment: str = field_("dabench", empty_is_null=True, doc="MLflow experiment")
    run_name: str | None = field_(None, empty_is_null=True, doc="MLflow run name (null = generated); never a file path")
    tags: Mapping[str, str] = field_({}, item=Spec("text", min_len=0, max_len=5000), doc="extra MLflow tags")
    parent_run_id: str | None = field_(
        None, empty_is_null=True, doc="the MLflow parent run (a study's), set by the sweeper per job"
    )
    timeout_s: float = field_(30.0, low=0.1, high=3600, doc="bound on one call to a tracking server or database (s)")
    system_metrics_interval_s: float = field_(
        10.0, low=0, high=86400, doc="MLflow's system-metrics sampler on measured runs (s; 0 = off)"
    )


@dataclass(frozen=True)
class BandConfig:
    """The band around every predicted number (docs/perfmodel.md, "Out-of-sample error and bands")."""

    nominal: float = field_(0.8, low=0.5, high=0.99, doc="the bands' nominal coverage: the share of outcomes inside")


@dataclass(frozen=True)
class RunConfig:
    model: ModelConfig
    hardware: HardwareSpec
    parallel: ParallelConfig
    precision: PrecisionConfig
    run: RunSettings
    tracking: TrackingConfig
    band: BandConfig = BandConfig()

    @property
    def data_copies(self) -> int:
        """Data-parallel copies of the model: dp degree, times replicas of a tp/pp group."""
        return self.parallel.replicas * (self.parallel.degree if self.parallel.strategy in ("dp", "fsdp") else 1)

    @property
    def samples_per_step(self) -> int:
        """Samples one optimizer step consumes over all chips."""
        return self.run.batch_size * self.run.grad_accum * self.data_copies

    @property
    def tokens_per_step(self) -> int:
        return self.samples_per_step * self.model.seq_len

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: config section -> its typed class (the schema's sections, in order)
SECTION_TYPES: dict[str, type] = typing.get_type_hints(RunConfig)
