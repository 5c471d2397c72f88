"""Build a :class:`~dabench.config.sections.RunConfig` from a composed config mapping, or raise
:class:`~dabench.core.status.ConfigError` naming the field, the value and what would be valid.
Nothing downstream reads raw Hydra config.

Each field is checked by its spec (:mod:`dabench.config.check`); the builders here add the rules
across fields (divisibility, sums, placement) listed in docs/config.md.
"""

from __future__ import annotations

from typing import Any, Mapping

from dabench.config.check import check_section, check_value
from dabench.config.fields import specs
from dabench.config.schema import check_keys
from dabench.config.sections import (
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
    return model


def build_hardware(section: Mapping[str, Any]) -> HardwareSpec:
    return HardwareSpec(**check_section(HardwareSpec, section, "hardware"))


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
    placed = check_value(specs(ParallelConfig)["placement"], value, "parallel.placement")
    given = section.get("layers_per_stage")
    if given is not None and (not isinstance(given, (list, tuple)) or tuple(given) != placed):
        raise ConfigError(
            "parallel.layers_per_stage", given, f"conflicts with parallel.placement={value!r}; set only one of them"
        )
    return {**section, "layers_per_stage": list(placed), "degree": placed.stages}, placed


def build_parallel(section: Mapping[str, Any], model: ModelConfig) -> ParallelConfig:
    p = "parallel"
    values = check_section(ParallelConfig, section, p)
    placement = values.pop("placement")
    strategy, degree, replicas = values["strategy"], values["degree"], values["replicas"]
    if placement is not None:
        # the placement defines the stages (parallel.degree = its length) and, through
        # build_run_config, the layer count (model.n_layers = its sum)
        if strategy != "pp":
            raise ConfigError(f"{p}.placement", section.get("placement"), "only applies to parallel=pp")
        section, placed = _placed_section(section)
        values["layers_per_stage"], degree = placed, placed.stages
    if strategy == "none" and degree != 1:
        raise ConfigError(f"{p}.degree", degree, "must be 1 when parallel.strategy=none (pick parallel=dp|tp|pp)")
    if strategy in ("dp", "fsdp") and replicas != 1:
        raise ConfigError(f"{p}.replicas", replicas, f"must be 1 for parallel={strategy} (use parallel.degree)")
    if strategy == "tp" and model.n_heads % degree:
        raise ConfigError(f"{p}.degree", degree, f"must divide model.n_heads={model.n_heads} for tensor parallelism")
    layers = values["layers_per_stage"]
    layers_per_stage: Placement | None = None
    if strategy == "pp":
        if layers is None:
            if model.n_layers < degree:
                raise ConfigError(
                    f"{p}.degree", degree, f"must be at most model.n_layers={model.n_layers} for an even split"
                )
            layers_per_stage = Placement.even(model.n_layers, degree)
        else:
            layers_per_stage = Placement(layers)
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
    return ParallelConfig(**{**values, "degree": degree, "layers_per_stage": layers_per_stage})


def build_precision(section: Mapping[str, Any]) -> PrecisionConfig:
    precision = PrecisionConfig(**check_section(PrecisionConfig, section, "precision"))
    if precision.autocast and precision.param_dtype != "fp32":
        raise ConfigError(
            "precision.param_dtype",
            precision.param_dtype,
            "must be fp32 when precision.autocast=true (fp32 master weights)",
        )
    return precision


def build_run(section: Mapping[str, Any]) -> RunSettings:
    return RunSettings(**check_section(RunSettings, section, "run"))


def build_tracking(section: Mapping[str, Any]) -> TrackingConfig:
    return TrackingConfig(**check_section(TrackingConfig, section, "tracking"))


def default_grad_accum(cfg: Mapping[str, Any]) -> int:
    """``run.grad_accum`` when the config leaves it null (conf/config.yaml): 1, except on a
    pipelined IPU (its platform record's ``pipeline_grad_accum``; ``parallel=pp`` over p stages):
    PopTorch trains a pipeline over p IPUs in 2p - 1 stages (forward and backward) and refuses a gradient accumulation
    (``Training.gradientAccumulation``, the pipeline's micro-batches per step) below that, so the
    default is the fewest it accepts, 2p - 1 (dabench.backends.ipu and dabench.perfmodel.ipu check
    the same bound). It follows every depth: ``parallel.degree`` or a placement's length."""
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
    """A copy of a composed config in which ``parallel.placement`` (when set) has filled in what it
    implies: ``parallel.layers_per_stage`` (the parsed list), ``parallel.degree`` (its length) and
    ``model.n_layers`` (its sum); and a null ``run.grad_accum`` its default
    (:func:`default_grad_accum`, after the placement has set the depth). Call it before naming or
    logging a run so that the recorded parameters are the ones that ran; :func:`build_run_config`
    applies it too."""
    out = dict(cfg)
    parallel = out.get("parallel")
    if (
        isinstance(parallel, Mapping)
        and parallel.get("placement") is not None
        and parallel.get("strategy", "none") == "pp"
    ):  # (other strategies: build_parallel refuses it)
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
    check_keys(cfg)
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
        parallel=build_parallel(_section(cfg, "parallel"), model),
        precision=precision,
        run=build_run(_section(cfg, "run")),
        tracking=build_tracking(_section(cfg, "tracking")),
        band=BandConfig(**check_section(BandConfig, _section(cfg, "band"), "band")),
    )


def _section(cfg: Mapping[str, Any], name: str) -> Any:
    """A section that may be left out (null or absent: all defaults)."""
    value = cfg.get(name)
    return {} if value is None else value


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
