"""Pipeline parallelism through ``torch.distributed.pipelining``.
Derivation: docs/distributed.md, "The strategies" and "Where the APIs fall short".
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

from dabench.distributed.commtime import ping_pong
from dabench.distributed.context import RankContext, Trainer, adamw, replica_batch, seeded_model
from dabench.distributed.dp import wrap_ddp
from dabench.workload.model import DecoderStack

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}
P2P_REPS = 5  #: timed ping-pong round trips per stage boundary (after one untimed)


class StageModule(nn.Module):
    """A contiguous slice of the stack: optional embedding, some blocks, optional head (logits)."""

    def __init__(self, model: DecoderStack, first: int, last: int, with_embedding: bool, with_head: bool):
        super().__init__()
        self.embedding = model.embedding if with_embedding else None
        self.blocks = nn.ModuleList(model.blocks[first:last])
        self.head = model.head if with_head else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.embedding is not None:
            x = self.embedding(x)
        for block in self.blocks:
            x = block(x)
        return self.head.logits(x) if self.head is not None else x


def tied_table_group(ctx: RankContext, mesh, replica: int, stage_index: int):
    """With ``model.tie_embeddings``, the two-rank group of each replica's first and last stage
    (created by every rank, in the same order, as ``dist.new_group`` requires); this rank's group,
    or None when the table is not tied or this rank holds neither copy."""
    par = ctx.rc.parallel
    if not getattr(ctx.rc.model, "tie_embeddings", False) or par.degree < 2:
        return None
    ranks = mesh.mesh.tolist()  # [replica][stage] -> global rank
    groups = [dist.new_group([row[0], row[-1]]) for row in ranks]
    return groups[replica] if stage_index in (0, par.degree - 1) else None


def tied_table(module: nn.Module) -> nn.Parameter:
    """The token table on this stage: the embedding's (stage 0) or the LM head's (last stage)."""
    stage = getattr(module, "module", module)  # under DDP
    return stage.embedding.tok.weight if stage.embedding is not None else stage.head.lm_head.weight


def stage_layers(layers_per_stage: tuple[int, ...], stage: int) -> tuple[int, int]:
    """[first, last) block indices of ``stage``."""
    first = sum(layers_per_stage[:stage])
    return first, first + layers_per_stage[stage]


def stage_io_examples(ctx: RankContext, stage: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Meta tensors with the shape and dtype of one micro-batch's stage input and output: static
    metadata, so no shape-inference forward runs (docs/distributed.md, "Where the APIs fall short")."""
    par, model = ctx.rc.parallel, ctx.rc.model
    micro = ctx.rc.run.batch_size // par.micro_batches
    float_meta = {"device": "meta", "requires_grad": True}  # activations carry gradients back
    hidden = (micro, model.seq_len, model.hidden_size)
    if stage == 0:
        first = torch.empty(micro, model.seq_len, dtype=torch.long, device="meta")
    else:
        first = torch.empty(hidden, dtype=ctx.activation_dtype, **float_meta)
    if stage < par.degree - 1:
        return first, torch.empty(hidden, dtype=ctx.activation_dtype, **float_meta)
    return first, torch.empty(micro, model.seq_len, model.vocab_size, dtype=ctx.logits_dtype, **float_meta)


@dataclass
class PipelineTrainer(Trainer):
    stage: PipelineStage | None = None
    schedule: Any = None
    module: nn.Module | None = None
    optimizer: torch.optim.Optimizer | None = None
    ids: torch.Tensor | None = None
    targets: torch.Tensor | None = None
    pp_group: Any = None
    tied_group: Any = None  #: this replica's first and last stage, when the token table is tied
    losses: list[torch.Tensor] = field(default_factory=list)

    @classmethod
    def build(cls, ctx: RankContext, mesh) -> "PipelineTrainer":
        par = ctx.rc.parallel
        stage_index = mesh.get_local_rank("pp")
        replica = mesh.get_local_rank("dp")
        first, last = stage_layers(par.layers_per_stage, stage_index)
        is_last = stage_index == par.degree - 1
        module: nn.Module = StageModule(seeded_model(ctx.rc, ctx.device), first, last, stage_index == 0, is_last)
        if par.replicas > 1:
            module = wrap_ddp(module, ctx, mesh.get_group("dp"), par.replicas)
        pp_group = mesh.get_group("pp")
        inputs, outputs = stage_io_examples(ctx, stage_index)
        stage = PipelineStage(
            module, stage_index, par.degree, ctx.device, input_args=inputs, output_args=outputs, group=pp_group
        )
        ids, targets = replica_batch(ctx.rc, ctx.device, replica, par.replicas)
        role = {"stage": stage_index, "replica": replica, "layers": [first, last]}
        optimizer, tied = adamw(module.parameters(), ctx.rc), tied_table_group(ctx, mesh, replica, stage_index)
        trainer = cls(ctx, "pp", role, stage, None, module, optimizer, ids, targets, pp_group, tied)
        trainer.schedule = SCHEDULES[par.schedule](
            stage, n_microbatches=par.micro_batches, loss_fn=trainer.loss_fn, scale_grads=False
        )
        stage.forward_one_chunk = trainer._timed(stage.forward_one_chunk, "forward")
        stage.backward_one_chunk = trainer._timed(stage.backward_one_chunk, "backward", ddp_exposed=par.replicas > 1)
        return trainer

    def _timed(self, method, label: str, ddp_exposed: bool = False):
        log, clock = self.ctx.log, self.ctx.clock

        def timed(*args, **kwargs):
            start = clock.mark()
            out = method(*args, **kwargs)
            end = clock.mark()
            log.add("compute", label, 0, start, end)
            if ddp_exposed and log.last_issue is not None:  # the DP all-reduce ran inside this chunk
                log.add("exposed", "allreduce", 0, log.last_issue, end)
                log.last_issue = None
            return out

        return timed

    def loss_fn(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy as in Head.forward, divided by micro_batches * grad_accum (see module doc)."""
        start = self.ctx.clock.mark()
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        scaled = loss / (self.ctx.rc.parallel.micro_batches * self.ctx.rc.run.grad_accum)
        self.ctx.log.add("compute", "loss", 0, start, self.ctx.clock.mark())
        return scaled

    def step(self) -> torch.Tensor | None:
        clock, log = self.ctx.clock, self.ctx.log
        log.last_issue = None
        for _ in range(self.ctx.rc.run.grad_accum):
            self.losses.clear()
            args = (self.ids,) if self.stage.is_first else ()
            kwargs = {"target": self.targets, "losses": self.losses} if self.stage.is_last else {}
            with self.ctx.autocast():
                self.schedule.step(*args, **kwargs)
        start = clock.mark()
        if self.tied_group is not None:
            dist.all_reduce(tied_table(self.module).grad, group=self.tied_group)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        log.add("compute", "optimizer", 0, start, clock.mark())
        if not self.stage.is_last:
            return None
        # the schedule collects the scaled loss of each micro-batch of the last call; undo the scale
        scale = self.ctx.rc.parallel.micro_batches * self.ctx.rc.run.grad_accum
        return torch.stack([loss.detach() for loss in self.losses]).mean() * scale

    def after_timed(self) -> dict[str, Any]:
        """One-way p2p time of an activation-sized message across each boundary this rank is on."""
        par, ctx = self.ctx.rc.parallel, self.ctx
        index = self.stage.stage_index
        micro = ctx.rc.run.batch_size // par.micro_batches
        message = torch.zeros(
            micro, ctx.rc.model.seq_len, ctx.rc.model.hidden_size, dtype=ctx.activation_dtype, device=ctx.device
        )
        one_way: dict[str, float] = {}
        for boundary in range(par.degree - 1):
            if index not in (boundary, boundary + 1):
                continue
            lower = index == boundary
            peer = dist.get_global_rank(self.pp_group, boundary + 1 if lower else boundary)
            one_way[str(boundary)] = statistics.median(ping_pong(message, peer, lower, P2P_REPS, ctx.clock))
        return {"p2p_one_way_s": one_way, "p2p_bytes": message.numel() * message.element_size(), "micro_batch": micro}
