"""Helpers shared by the analytical models: the peak at the run's precision, walking the op graph
by layer, the width and weights of each op, and assembling the Profile.

Every predictor returns ``Profile(mode="predict")``: a predicted number is never shown as a
measured one (the runner tags such runs ``dabench.mode=predict``).
"""

from __future__ import annotations

from typing import Iterator

from dabench.config.sections import ModelConfig, RunConfig
from dabench.core.profile import CommEvent, Profile, Subtask, UnitUse
from dabench.core.status import UnsupportedError
from dabench.workload.opgraph import Layer, Op, OpGraph


def peak_flops(rc: RunConfig, precision: str | None = None) -> float:
    """Peak FLOP/s per chip at the run's precision, from the hardware spec."""
    name = precision or rc.precision.name
    value = rc.hardware.peak_flops.get(name)
    if not value:
        raise UnsupportedError(f"hardware={rc.hardware.name} lists no peak FLOP/s for {name}")
    return float(value)


def require_strategy(rc: RunConfig, allowed: tuple[str, ...], why: str) -> None:
    if rc.parallel.strategy not in allowed:
        raise UnsupportedError(f"parallel={rc.parallel.strategy} is not modelled on hardware={rc.hardware.name}: {why}")


def layer_groups(graph: OpGraph) -> Iterator[tuple[Layer, int]]:
    """(layer, count) with identical decoder blocks folded together: embedding, block x L, head."""
    blocks = [layer for layer in graph.layers if layer.kind == "block"]
    for layer in graph.layers:
        if layer.kind != "block":
            yield layer, 1
        elif layer is blocks[0]:
            yield layer, len(blocks)


def op_width(op: Op, model: ModelConfig) -> int:
    """Features per token of an op's output (the dimension a unit can spread it over): H, the FFN
    width, the vocabulary, or 0 for the optimizer update (parallel without limit)."""
    name = op.name
    if name in ("mlp.fc1", "mlp.gelu"):
        return model.ffn_hidden
    if name in ("lm_head", "loss"):
        return model.vocab_size
    if name == "adamw":
        return 0
    return model.hidden_size


def weight_params(op: Op, model: ModelConfig) -> int:
    """Parameters an op reads as weights: its own, or for a tied LM head the V x H token table."""
    if op.name == "lm_head" and model.tie_embeddings:
        return model.vocab_size * model.hidden_size
    return op.params


def make_profile(
    rc: RunConfig,
    source: str,
    step_s: float,
    *,
    subtask_kind: str,
    units: dict[str, UnitUse],
    subtasks: list[Subtask],
    memory: dict[str, float],
    comm: list[CommEvent] | None = None,
    class_times: dict[str, float] | None = None,
    single_chip_samples_per_s: float | None = None,
    extra: dict[str, float] | None = None,
    bottleneck: str | None = None,
    tags: dict[str, str] | None = None,
) -> Profile:
    """A predicted Profile for one optimizer step of ``rc`` taking ``step_s`` seconds."""
    if not step_s > 0:
        raise ValueError(f"predicted step time must be positive, got {step_s}")
    return Profile(
        mode="predict",
        source=source,
        step_times_s=[step_s],
        samples_per_step=rc.samples_per_step,
        tokens_per_step=rc.tokens_per_step,
        chips=rc.parallel.n_chips,
        units=units,
        subtasks=subtasks,
        memory_bytes=memory,
        comm=comm or [],
        class_times_s=class_times or {},
        bottleneck=bottleneck,
        single_chip_samples_per_s=single_chip_samples_per_s,
        extra_metrics=extra or {},
        tags={"subtask_kind": subtask_kind, **(tags or {})},
    )
