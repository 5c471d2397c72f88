"""Memory per chip of the CPU/GPU model: what one chip of the run's layout holds at its peak.

``memory_per_chip(rc, graph, layout, margin)`` -> :class:`MemoryUse`.
Derivation: docs/perfmodel.md, "GPU memory per GPU".
"""

from __future__ import annotations

from dabench.config.sections import RunConfig
from dabench.perfmodel.capacity import MemoryUse
from dabench.perfmodel.pipeline import stash_depth
from dabench.workload.opgraph import OpGraph

#: DistributedDataParallel's gradient bucket (torch's bucket_cap_mb default, 25 MiB); two in flight
DDP_BUCKET_BYTES = 25 * 2**20


def stage_layers(rc: RunConfig) -> tuple[int, ...]:
    """Decoder blocks per pipeline stage (one stage unless parallel=pp)."""
    par = rc.parallel
    if par.strategy != "pp":
        return (rc.model.n_layers,)
    if par.layers_per_stage:
        return tuple(par.layers_per_stage)
    base, extra = divmod(rc.model.n_layers, par.degree)
    return tuple(base + (1 if i < extra else 0) for i in range(par.degree))


def score_bytes(rc: RunConfig, batch: float, e: int) -> float:
    """Saved bytes of one attention's materialized seq x seq scores: softmax output and dropout
    output in the compute dtype and a 1-byte dropout mask per score (Korthikanti et al. 2022, 5as/h)."""
    return batch * rc.model.n_heads * rc.model.seq_len**2 * (2 * e + 1)


def memory_per_chip(rc: RunConfig, graph: OpGraph, layout, margin: float = 0.0) -> MemoryUse:
    """The peak bytes of the busiest chip (docs/perfmodel.md, "GPU memory per GPU")."""
    par, precision, model = rc.parallel, graph.precision, rc.model
    w, e = precision.param_bytes, precision.compute_bytes
    copy = e if precision.autocast else 0
    tensor = (par.degree if par.strategy == "tp" else 1) * layout.stage_tensor
    block = graph.layer("block.0") if model.n_layers else None
    block_params = block.params if block else 0
    emb, head = graph.layer("embedding"), graph.layer("head")
    layers = stage_layers(rc)
    p = len(layers)
    head_stage = p - 1 if (par.strategy != "pp" or par.head_on_last) else 0
    mb = par.micro_batches if par.strategy == "pp" else 1
    fraction = 1.0 / mb
    tokens = graph.batch_size * fraction * model.seq_len
    kept = tokens * model.hidden_size * e  # a block's input: all full recomputation keeps
    saved = block.saved_bytes * fraction if block else 0.0
    if layout.score_head_dim:
        saved += score_bytes(rc, graph.batch_size * fraction, e) * (1 + (model.cross_attention_layers > 0))
    best: MemoryUse | None = None
    for i, n in enumerate(layers):
        params = n * block_params + (emb.params if i == 0 else 0) + (head.params if i == head_stage else 0)
        params /= tensor
        weights, grads, moments = params * (w + copy), params * w, params * 2 * w
        if par.strategy == "fsdp" and par.degree > 1:
            # FSDP's mixed precision gathers layers in the compute dtype: no whole-model 16-bit copy
            n_shards, unit, gathered = par.degree, block_params / tensor, e if precision.autocast else w
            moments /= n_shards
            if par.sharding in ("grad_op", "full"):
                grads = grads / n_shards + unit * gathered  # a layer's full gradient before its reduce-scatter
            if par.sharding == "full":
                weights = params * w / n_shards + 2 * unit * gathered  # the gathered layer and the prefetched one
        depth = stash_depth(i, p, mb, par.schedule)
        acts = n * kept * depth + (saved if n else 0.0) if layout.recompute else n * saved * depth
        acts += (emb.saved_bytes * fraction * depth if i == 0 else 0.0) + (
            head.saved_bytes * fraction if i == head_stage else 0.0
        )
        acts /= tensor
        comm = 0.0
        if rc.data_copies > 1 and not (par.strategy == "fsdp" and par.sharding != "optimizer"):
            comm += 2 * DDP_BUCKET_BYTES
        if tensor > 1:
            comm += tokens * model.hidden_size * e  # the all-reduced activation
        if p > 1:
            comm += 2 * kept / tensor  # the activation sent on and the gradient received
        use = MemoryUse(weights, grads, moments, acts, comm)
        if best is None or use.total > best.total:
            best = use
    assert best is not None
    return MemoryUse(best.weights, best.gradients, best.optimizer, best.activations, best.other, margin * best.total)
