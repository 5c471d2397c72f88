"""Tensor parallelism (Megatron-style) through ``torch.distributed.tensor.parallel``.
Derivation: docs/distributed.md, "The strategies".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from torch.distributed.tensor import Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, PrepareModuleInput, RowwiseParallel, parallelize_module

from dabench.distributed.commtime import CollectiveTimer, IntervalLog
from dabench.distributed.context import RankContext, WholeModelTrainer, adamw, replica_batch, seeded_model
from dabench.workload.model import DecoderStack

INSTRUMENTED_STEPS = 2  #: forward + backward passes under the collective timer, after timing


def shard_decoder_blocks(model: DecoderStack, mesh) -> DecoderStack:
    """Megatron-style sharding of every block in place (see the module docstring)."""
    for block in model.blocks:
        parallelize_module(
            block.attn,
            mesh,
            {
                "": PrepareModuleInput(input_layouts=(Replicate(),), desired_input_layouts=(Replicate(),)),
                "q": ColwiseParallel(),
                "k": ColwiseParallel(),
                "v": ColwiseParallel(),
                "proj": RowwiseParallel(),
            },
        )
        parallelize_module(block.mlp, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    return model


@dataclass
class TensorParallelTrainer(WholeModelTrainer):
    @classmethod
    def build(cls, ctx: RankContext, mesh) -> "TensorParallelTrainer":
        model = shard_decoder_blocks(seeded_model(ctx.rc, ctx.device), mesh)
        ids, targets = replica_batch(ctx.rc, ctx.device, 0, 1)
        return cls(
            ctx, "tp", {"tp_rank": mesh.get_local_rank()}, model, adamw(model.parameters(), ctx.rc), ids, targets
        )

    def after_timed(self) -> dict[str, Any]:
        log = IntervalLog(self.ctx.clock)
        with CollectiveTimer(log):
            for k in range(INSTRUMENTED_STEPS):
                log.step = k
                self.forward_backward()
        self.optimizer.zero_grad(set_to_none=True)
        self.ctx.clock.synchronize()
        return {"instrumented_steps": INSTRUMENTED_STEPS, "instrumented_intervals": [asdict(i) for i in log.resolve()]}
