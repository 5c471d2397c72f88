"""Data parallelism: DistributedDataParallel, gradients all-reduced each step (``no_sync()`` for
all but the last of ``run.grad_accum`` micro-batches).

Logs each bucket's in-flight time (total comm) and the exposed comm time, last bucket's issue to
``backward()`` returning; per-rank compute = step - exposed comm.
Derivation: docs/distributed.md, "The strategies" and "What is measured".
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from dabench.distributed.commtime import timed_allreduce_hook
from dabench.distributed.context import RankContext, WholeModelTrainer, adamw, replica_batch, seeded_model


def wrap_ddp(module: torch.nn.Module, ctx: RankContext, group: dist.ProcessGroup | None, replicas: int):
    """DDP over ``group`` (None = all ranks) with the timed all-reduce hook."""
    device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    ddp = DistributedDataParallel(module, device_ids=device_ids, process_group=group)
    ddp.register_comm_hook(None, timed_allreduce_hook(ctx.log, group, replicas))
    return ddp


def build_dp(ctx: RankContext) -> WholeModelTrainer:
    replicas = ctx.world_size
    model = wrap_ddp(seeded_model(ctx.rc, ctx.device), ctx, None, replicas)
    ids, targets = replica_batch(ctx.rc, ctx.device, ctx.rank, replicas)
    optimizer = adamw(model.parameters(), ctx.rc)
    return WholeModelTrainer(ctx, "dp", {"replica": ctx.rank}, model, optimizer, ids, targets, sync_last_only=True)
