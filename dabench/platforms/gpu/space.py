"""The GPU deployment space of ``dabench advise`` (no shipped sweep): GPUs, then one layout of
them (tensor x pipeline x data parallel), micro-batches and recomputation."""

from __future__ import annotations

from typing import Any, Mapping

from dabench.advise.space import Dim, PlatformSpace, powers_of_two
from dabench.tune.choice_tree import ChoiceTreeSpace

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


def advise_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    """GPUs (no shipped sweep): data x tensor x pipeline layouts, micro-batches, recomputation."""
    space.groups["parallel"] = "tp"
    space.precisions = ["bf16", "fp16", "mixed", "fp32"]
    space.dims = [
        Dim("run.batch_size", [1, 2, 4, 8, 16, 32]),
        Dim("run.grad_accum", [1, 4, 16]),
        Dim("hardware.options.recompute", ["none", "full"]),
    ]
    heads, layers = int(config["model"]["n_heads"]), int(config["model"]["n_layers"])
    # GPUs, then one layout of them (:func:`gpu_layouts`), as the tuner's choice tree
    branches = {n: gpu_layouts(n, heads, layers) for n in chips}
    space.structured = ChoiceTreeSpace("chips", "layout", branches, lambda n: f"gpus{n}", gpu_layout_overrides)
    space.notes = [
        "GPUs x tensor x pipeline x data parallel (plain, or fsdp sharding full / grad_op / optimizer), "
        "pipeline micro-batches, recomputation, micro-batch, precision, gradient accumulation"
    ]
    return space
