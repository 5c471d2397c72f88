"""Data parallelism: DistributedDataParallel, gradients all-reduced each step (``no_sync()`` for
all but the last of ``run.grad_accum`` micro-batches).

Logs each bucket's in-flight time (total comm) and the exposed comm time, last bucket's issue to
``backward()`` returning; per-rank compute = step - exposed comm.
Derivation: docs/distributed.md, "The strategies" and "What is measured".
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from dabench.distributed.commtime import timed_allreduce_hook
from dabench.distributed.context import RankContext, Trainer, adamw, replica_batch, seeded_model


def wrap_ddp(module: torch.nn.Module, ctx: RankContext, group: dist.ProcessGroup | None, replicas: int):
    """DDP over ``group`` (None = all ranks) with the timed all-reduce hook."""
    device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    ddp = DistributedDataParallel(module, device_ids=device_ids, process_group=group)
    ddp.register_comm_hook(None, timed_allreduce_hook(ctx.log, group, replicas))
    return ddp


@dataclass
class DataParallelTrainer(Trainer):
    model: DistributedDataParallel | None = None
    optimizer: torch.optim.Optimizer | None = None
    ids: torch.Tensor | None = None
    targets: torch.Tensor | None = None

    @classmethod
    def build(cls, ctx: RankContext) -> "DataParallelTrainer":
        replicas = ctx.world_size
        model = wrap_ddp(seeded_model(ctx.rc, ctx.device), ctx, None, replicas)
        ids, targets = replica_batch(ctx.rc, ctx.device, ctx.rank, replicas)
        return cls(ctx, "dp", {"replica": ctx.rank}, model, adamw(model.parameters(), ctx.rc), ids, targets)

    def step(self) -> torch.Tensor:
        log, clock, accum = self.ctx.log, self.ctx.clock, self.ctx.rc.run.grad_accum
        log.last_issue = None
        loss = None
        for micro in range(accum):
            sync = contextlib.nullcontext() if micro == accum - 1 else self.model.no_sync()
            with sync:
                with self.ctx.autocast():
                    loss = self.model(self.ids, self.targets)
                (loss / accum).backward()
        if log.last_issue is not None:
            log.add("exposed", "allreduce", 0, log.last_issue, clock.mark())
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()
