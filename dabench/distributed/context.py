"""What every strategy's trainer shares: the rank context, the seeded model, the optimizer, the
global batch and the Trainer interface.
Every rank builds the whole stack from the run's seed, then keeps, shards or wraps its part.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import torch

from dabench.backends.torch_train import TORCH_DTYPES, adamw_eps
from dabench.config.sections import RunConfig
from dabench.distributed.commtime import IntervalLog
from dabench.workload.model import DecoderStack, synthetic_batch


@dataclass
class RankContext:
    """One rank's view of the job: config, identity, device, clock and interval log."""

    rc: RunConfig
    rank: int
    world_size: int
    device: torch.device
    clock: Any
    log: IntervalLog

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return TORCH_DTYPES[self.rc.precision.compute_dtype] if self.rc.precision.autocast else None

    @property
    def activation_dtype(self) -> torch.dtype:
        """dtype of the residual stream between layers (what pipeline stages send): the weight
        dtype, also under autocast (the embedding output and the residual adds stay in it)."""
        return TORCH_DTYPES[self.rc.precision.param_dtype]

    @property
    def logits_dtype(self) -> torch.dtype:
        """dtype of the LM head's output: the autocast dtype under mixed precision."""
        return self.autocast_dtype or self.activation_dtype

    def autocast(self):
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)


def seeded_model(rc: RunConfig, device: torch.device) -> DecoderStack:
    """The full stack with the run's seed, on ``device`` at the stored weight dtype."""
    torch.manual_seed(rc.run.seed)
    return DecoderStack.from_config(rc.model).to(device=device, dtype=TORCH_DTYPES[rc.precision.param_dtype])


def adamw(params, rc: RunConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=rc.run.lr, eps=adamw_eps(rc.precision.param_dtype))


def replica_batch(rc: RunConfig, device: torch.device, replica: int, replicas: int):
    """(ids, targets) of data-parallel copy ``replica``: its slice of the global micro-batch
    ``synthetic_batch(batch_size * replicas)``."""
    size = rc.run.batch_size
    ids, targets = synthetic_batch(size * replicas, rc.model.seq_len, rc.model.vocab_size, rc.run.seed)
    part = slice(replica * size, (replica + 1) * size)
    return ids[part].contiguous().to(device), targets[part].contiguous().to(device)


@dataclass
class Trainer(ABC):
    """A rank's share of the training step. ``role`` names its place in the job (replica,
    stage, tensor-parallel rank); ``strategy`` is dp, tp or pp."""

    ctx: RankContext
    strategy: str = ""
    role: dict[str, Any] = field(default_factory=dict)

    @abstractmethod
    def step(self) -> torch.Tensor | None:
        """One optimizer step (all micro-batches). Returns this rank's loss of the step's last
        micro-batch (a scalar tensor), or None where the rank computes no loss."""

    def after_timed(self) -> dict[str, Any]:
        """Extra measurements after the timed window (instrumented steps, p2p ping-pong)."""
        return {}


@dataclass
class WholeModelTrainer(Trainer):
    """A rank that runs the whole (maybe sharded or wrapped) model on its batch (dp, fsdp, tp)."""

    model: Any = None
    optimizer: torch.optim.Optimizer | None = None
    ids: torch.Tensor | None = None
    targets: torch.Tensor | None = None
    sync_last_only: bool = False  #: DDP's ``no_sync()`` for all but the last micro-batch

    def forward_backward(self) -> torch.Tensor:
        """``run.grad_accum`` micro-batches of forward + backward (loss / grad_accum); the last loss."""
        accum = self.ctx.rc.run.grad_accum
        for micro in range(accum):
            skip_sync = self.sync_last_only and micro < accum - 1
            with self.model.no_sync() if skip_sync else contextlib.nullcontext():
                with self.ctx.autocast():
                    loss = self.model(self.ids, self.targets)
                (loss / accum).backward()
        return loss.detach()

    def step(self) -> torch.Tensor:
        log = self.ctx.log
        log.last_issue = None
        loss = self.forward_backward()
        if log.last_issue is not None:  # DDP's timed all-reduce: exposed from the last bucket's issue
            log.add("exposed", "allreduce", 0, log.last_issue, self.ctx.clock.mark())
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss
