"""Per-platform deployment spaces of ``dabench advise``, built from the shipped Optuna sweeps (chip
counts widened to ``max_chips``) and shaped per platform (cuda: its own layouts). A deployment is
``(precision, {override key: value})``. Details: docs/advise.md, "What is searched".
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from dabench.config.build import flatten
from dabench.config.compose import compose
from dabench.config.files import sweep_file
from dabench.config.schema import group_options
from dabench.core.platforms import known, load
from dabench.core.status import ConfigError
from dabench.tune.dataflow_spaces import ChoiceTreeSpace, rdu_chips_space, wse2_execution_space
from dabench.tune.ipu import ipu_pipeline_space
from dabench.tune.space import distribution_values, override_value, params_to_overrides, parse_overrides


def powers_of_two(limit: int) -> list[int]:
    return [2**i for i in range(0, int(math.log2(max(1, limit))) + 1)]


@dataclass
class Dim:
    """One categorical dimension: an override key and its values (Python values)."""

    key: str
    values: list[Any]


@dataclass
class PlatformSpace:
    platform: str
    groups: dict[str, str]  #: Hydra group choices besides model/hardware/precision (parallel)
    fixed: dict[str, Any]  #: key -> value set on every deployment
    precisions: list[str]
    dims: list[Dim]
    structured: Any = None  #: an object with suggest(trial) and (maybe) grid(), size()
    notes: list[str] = field(default_factory=list)

    def suggest(self, trial) -> tuple[str, dict[str, Any]]:
        precision = (
            self.precisions[0] if len(self.precisions) == 1 else trial.suggest_categorical("precision", self.precisions)
        )
        values = {
            d.key: (d.values[0] if len(d.values) == 1 else trial.suggest_categorical(d.key, d.values))
            for d in self.dims
        }
        if self.structured is not None:
            values.update(self.structured.suggest(trial))
        return precision, values

    def size(self) -> int:
        n = len(self.precisions) * math.prod(len(d.values) for d in self.dims)
        if self.structured is not None:
            n *= self.structured.size()
        return n

    def grid(self) -> Iterator[tuple[str, dict[str, Any]]]:
        structured = list(self.structured.grid()) if self.structured is not None else [{}]
        for precision in self.precisions:
            for combo in itertools.product(*(d.values for d in self.dims)):
                simple = dict(zip((d.key for d in self.dims), combo, strict=False))
                for extra in structured:
                    yield precision, {**simple, **extra}


def _sweep_groups(sweep: Mapping[str, Any]) -> dict[str, str]:
    """``override /group: choice`` entries of a sweep's defaults list (model excepted)."""
    groups = {}
    for entry in sweep.get("defaults") or []:
        if isinstance(entry, Mapping):
            for key, value in entry.items():
                if key.startswith("override /") and "@" not in key and value is not None:
                    groups[key.split("/", 1)[1]] = str(value)
    return groups


def _sweep_dims(sweep: Mapping[str, Any]) -> tuple[list[str], list[Dim]]:
    """(precision choices, the other categorical dimensions) of ``hydra.sweeper.params``."""
    params = ((sweep.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    parsed = parse_overrides(params_to_overrides(params))
    precisions: list[str] = []
    dims = []
    for dim in parsed.dimensions:
        values = [dim.to_value(v) for v in distribution_values(dim.distribution, dim.key)]
        if dim.key == "precision":
            precisions = [str(v) for v in values]
        else:
            dims.append(Dim(dim.key, values))
    return precisions, dims


class WeightStreamingSystems:
    """The WSE-2 execution-mode hook (``wse2_execution_space``) plus the number of CS-2 systems,
    sampled only under weight streaming (``systems.weight_streaming``)."""

    def __init__(self, inner, systems: Sequence[int]):
        self.inner, self.systems = inner, list(systems)

    def suggest(self, trial) -> dict[str, Any]:
        values = self.inner.suggest(trial)
        systems = 1
        if values["hardware.options.execution_mode"] == "weight_streaming" and len(self.systems) > 1:
            systems = trial.suggest_categorical("systems.weight_streaming", self.systems)
        return {**values, "parallel.degree": systems}

    def size(self) -> int:
        return sum(len(self.systems) if m == "weight_streaming" else len(r) for m, r in self.inner.branches.items())

    def grid(self) -> Iterator[dict[str, Any]]:
        for values in self.inner.grid():
            streaming = values["hardware.options.execution_mode"] == "weight_streaming"
            for systems in self.systems if streaming else [1]:
                yield {**values, "parallel.degree": systems}


#: pipeline micro-batches per step, as multiples of the stage count
MICRO_BATCHES_PER_STAGE = (1, 2, 4)
DATA_MODES = ("dp", "fsdp-full", "fsdp-grad_op", "fsdp-optimizer")


def gpu_layouts(n: int, heads: int, layers: int, per_node: int = 8) -> list[str]:
    """Layout labels of ``n`` GPUs: ``t<T>p<P><mode>[m<M>]``: tensor degree T (inside a node,
    dividing the heads), pipeline stages P (at most the layers), the rest data parallel, plain
    (dp) or sharded (fsdp-<sharding>; without pipeline stages), and M micro-batches per stage."""
    out = []
    for t in (x for x in powers_of_two(min(n, per_node)) if heads % x == 0):
        for p in (x for x in powers_of_two(n // t) if x <= layers):
            d = n // (t * p)
            if p == 1:
                out += [f"t{t}p1{mode}" for mode in DATA_MODES if mode == "dp" or d > 1]
            else:
                out += [f"t{t}p{p}dpm{m}" for m in MICRO_BATCHES_PER_STAGE]
    return out


def gpu_layout_overrides(n: int, label: str) -> dict[str, Any]:
    """The parallel overrides of layout ``label`` (see :func:`gpu_layouts`) on ``n`` GPUs."""
    t = int(label[1 : label.index("p")])
    rest = label[label.index("p") + 1 :]
    digits = len(rest) - len(rest.lstrip("0123456789"))
    p, mode = int(rest[:digits]), rest[digits:]
    d = n // (t * p)
    if p > 1:
        per_stage = int(mode.split("m", 1)[1])
        return {
            "parallel.strategy": "pp",
            "parallel.degree": p,
            "parallel.replicas": d,
            "parallel.micro_batches": per_stage * p,
            "parallel.schedule": "1f1b",
            "hardware.options.stage_tensor_degree": t,
        }
    if mode.startswith("fsdp"):
        return {
            "parallel.strategy": "fsdp",
            "parallel.degree": d,
            "parallel.sharding": mode.split("-", 1)[1],
            "hardware.options.stage_tensor_degree": t,
        }
    if t > 1:
        return {"parallel.strategy": "tp", "parallel.degree": t, "parallel.replicas": d}
    return {"parallel.strategy": "dp" if d > 1 else "none", "parallel.degree": d, "parallel.replicas": 1}


def gpu_layout_space(config: Mapping[str, Any], chips: Sequence[int]):
    """GPUs, then one layout of them (:func:`gpu_layouts`), as the tuner's choice tree."""

    model = config["model"]
    heads, layers = int(model["n_heads"]), int(model["n_layers"])
    branches = {n: gpu_layouts(n, heads, layers) for n in chips}
    return ChoiceTreeSpace("chips", "layout", branches, lambda n: f"gpus{n}", gpu_layout_overrides)


def build_space(platform: str, model: Mapping[str, Any], max_chips: int = 16) -> PlatformSpace:
    """The deployment space of ``platform`` for the composed ``model`` section: its shipped sweep's,
    shaped by its platform record's ``space`` (core/platforms.py)."""

    record = known(platform, "platforms")
    sweep = sweep_file(record.sweep) if record.sweep else {}
    groups = _sweep_groups(sweep)
    groups.pop("hardware", None), groups.pop("hydra/sweeper", None), groups.pop("model", None)
    default_precision = groups.pop("precision", None)
    fixed = flatten({section: sweep.get(section) or {} for section in ("hardware", "parallel")})
    fixed.pop("hardware.mode", None)
    precisions, dims = _sweep_dims(sweep)
    if not precisions and default_precision:
        precisions = [default_precision]
    notes = [f"from sweeps/{record.sweep}.yaml"] if sweep else []
    space = PlatformSpace(platform, groups, fixed, precisions or ["fp32"], dims, None, notes)
    if record.space:
        sweeper = (sweep.get("hydra") or {}).get("sweeper") or {}
        hook_args = dict((sweeper.get("space") or {}).get("args") or {})
        space = load(record.space)(space, hook_args, {"model": dict(model)}, powers_of_two(max_chips))
    return space


def cuda_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    """GPUs (no shipped sweep): data x tensor x pipeline layouts, micro-batches, recomputation."""
    space.groups["parallel"] = "tp"
    space.precisions = ["bf16", "fp16", "mixed", "fp32"]
    space.dims = [
        Dim("run.batch_size", [1, 2, 4, 8, 16, 32]),
        Dim("run.grad_accum", [1, 4, 16]),
        Dim("hardware.options.recompute", ["none", "full"]),
    ]
    space.structured = gpu_layout_space(config, chips)
    space.notes = [
        "GPUs x tensor x pipeline x data parallel (plain, or fsdp sharding full / grad_op / optimizer), "
        "pipeline micro-batches, recomputation, micro-batch, precision, gradient accumulation"
    ]
    return space


def rdu_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    space.structured = rdu_chips_space(config, **{**args, "chips": chips})
    return space


def wse2_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    space.groups["parallel"] = "dp"
    space.structured = WeightStreamingSystems(wse2_execution_space(config, **args), chips)
    space.notes.append("CS-2 systems (data parallel) under weight streaming")
    return space


def ipu_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    """Even placements only (skew 0): throughput is set by the most loaded IPU, so spreading the
    layers evenly over IPUs 1..k-1 is what the paper and Graphcore's recipes do; IPU 0 (embedding
    and head) gets first_stage_layers in 0..ceil(L/2). Plus replicated tensor sharding."""
    layers = int(config["model"].get("n_layers") or 1)
    args = {**args, "ipus": chips, "placement_skew": [0.0], "max_first_stage_layers": max(1, -(-layers // 2))}
    space.structured = ipu_pipeline_space(config, **args)
    space.dims.append(Dim("hardware.options.replicated_tensor_sharding", [False, True]))
    space.notes.append("replicated tensor sharding (Graphcore GPT-2 recipes)")
    return space


def overrides_of(
    space: PlatformSpace,
    model_overrides: Sequence[str],
    precision: str,
    values: Mapping[str, Any],
    mode: str = "predict",
) -> list[str]:
    """The ``python -m dabench`` overrides of one deployment (groups first)."""

    out = [*model_overrides, f"hardware={space.platform}", f"hardware.mode={mode}"]
    out += [f"{g}={c}" for g, c in space.groups.items()]
    out.append(f"precision={precision}")
    merged = {**space.fixed, **values}
    out += [f"{key}={override_value(value)}" for key, value in merged.items()]
    return out


def precision_section(name: str) -> dict:
    """The composed ``precision`` section of ``precision=<name>``."""
    try:
        return compose([f"precision={name}"])["precision"]
    except Exception:
        raise ConfigError("precision", name, f"one of {', '.join(group_options('precision'))}") from None
