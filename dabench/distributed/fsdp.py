"""Sharded data parallelism (``parallel=fsdp``): torch's FSDP2 (``fully_shard``) on every decoder
block and on the whole stack, ``reshard_after_forward`` for ``parallel.sharding=full``
(FULL_SHARD) and not for ``grad_op`` (SHARD_GRAD_OP); under autocast FSDP's mixed precision
gathers the weights in the compute dtype and reduces in the weight dtype. ``optimizer`` (ZeRO-1):
DistributedDataParallel with torch's ZeroRedundancyOptimizer over AdamW.
FSDP's own collectives are not timed (no comm events); ZeRO-1's all-reduce is timed as dp's.
Derivation: docs/distributed.md, "The strategies".
"""

from __future__ import annotations

import torch

from dabench.backends.torch_train import TORCH_DTYPES, adamw_eps
from dabench.distributed.context import RankContext, WholeModelTrainer, adamw, replica_batch, seeded_model
from dabench.distributed.dp import wrap_ddp


def shard_model(ctx: RankContext) -> torch.nn.Module:
    """The seeded stack with every decoder block and the root under ``fully_shard``."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    rc = ctx.rc
    model = seeded_model(rc, ctx.device)
    policy = MixedPrecisionPolicy()
    if ctx.autocast_dtype is not None:
        policy = MixedPrecisionPolicy(
            param_dtype=ctx.autocast_dtype, reduce_dtype=TORCH_DTYPES[rc.precision.param_dtype]
        )
    reshard = rc.parallel.sharding == "full"
    for module in (*model.blocks, model):  # every block, then the root
        fully_shard(module, mp_policy=policy, reshard_after_forward=reshard)
    return model


def build_fsdp(ctx: RankContext) -> WholeModelTrainer:
    """ZeRO-1 (DDP, its all-reduce timed, every micro-batch synced) or FSDP2 (collectives untimed)."""
    rc, replicas = ctx.rc, ctx.world_size
    ids, targets = replica_batch(rc, ctx.device, ctx.rank, replicas)
    if rc.parallel.sharding == "optimizer":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        model = wrap_ddp(seeded_model(rc, ctx.device), ctx, None, replicas)
        eps = adamw_eps(rc.precision.param_dtype)
        optimizer = ZeroRedundancyOptimizer(model.parameters(), torch.optim.AdamW, lr=rc.run.lr, eps=eps)
    else:
        model = shard_model(ctx)
        optimizer = adamw(model.parameters(), rc)
    return WholeModelTrainer(ctx, "fsdp", {"replica": ctx.rank}, model, optimizer, ids, targets)
