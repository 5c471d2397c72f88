"""The training step on a torch device, shared by the cpu and cuda backends: ``grad_accum``
micro-batches of forward + backward (loss / grad_accum), then AdamW and zero_grad; ``mixed``
keeps the weights in fp32 and autocasts to ``precision.compute_dtype``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from dabench.config.sections import RunConfig
from dabench.host.ceilings import tf32_enabled
from dabench.workload.model import DecoderStack, synthetic_batch

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def adamw_eps(param_dtype: str) -> float:
    """AdamW epsilon: 1e-8 in fp32/bf16; 1e-4 in fp16, where 1e-8 rounds to zero."""
    return 1e-4 if param_dtype == "fp16" else 1e-8


@dataclass
class TrainState:
    model: DecoderStack
    optimizer: torch.optim.Optimizer
    ids: torch.Tensor
    targets: torch.Tensor
    device: torch.device
    autocast_dtype: torch.dtype | None
    grad_accum: int

    def autocast(self):
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    def forward_backward(self, timer=None) -> torch.Tensor:
        """Forward and backward of all micro-batches of one step; returns the last loss."""
        loss = None
        for _ in range(self.grad_accum):
            with self.autocast():
                loss = self.model(self.ids, self.targets, timer)
            (loss / self.grad_accum).backward()
        return loss

    def optimizer_step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> torch.Tensor:
        loss = self.forward_backward()
        self.optimizer_step()
        return loss


def build_train_state(rc: RunConfig, device: torch.device) -> TrainState:
    """Seeded model, AdamW and one synthetic micro-batch on ``device`` at the run's precision.
    On CUDA, fp32 matmuls use TF32 exactly when ``hardware.options.tf32`` says so (the math mode
    the analytical model prices; torch's default is off), in every process, ranks included."""
    if device.type == "cuda":
        tf32 = tf32_enabled(rc.hardware, rc.precision)
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(rc.run.seed)
    model = DecoderStack.from_config(rc.model).to(device=device, dtype=TORCH_DTYPES[rc.precision.param_dtype])
    optimizer = torch.optim.AdamW(model.parameters(), lr=rc.run.lr, eps=adamw_eps(rc.precision.param_dtype))
    ids, targets = synthetic_batch(rc.run.batch_size, rc.model.seq_len, rc.model.vocab_size, rc.run.seed, device)
    autocast_dtype = TORCH_DTYPES[rc.precision.compute_dtype] if rc.precision.autocast else None
    return TrainState(model, optimizer, ids, targets, device, autocast_dtype, rc.run.grad_accum)


_ELEMENTWISE_OPS = ("gelu", "aten::add", "aten::mul", "aten::div", "aten::sub", "aten::copy_", "aten::to")
_ELEMENTWISE_OPS += ("aten::_to_copy", "aten::fill_", "aten::zero_", "aten::sum", "aten::neg")
# aten op name -> op class, for per-class times from torch.profiler (self time of each op); the
# first match wins, so loss comes before attention: its "softmax" would claim aten::_log_softmax
# and its backward, whose FLOPs the op graph counts under loss (the loss point then sat above its roof)
_CLASS_PATTERNS = (
    ("loss", ("nll_loss", "log_softmax", "cross_entropy")),
    ("attention", ("scaled_dot_product", "flash_attention", "efficient_attention", "_softmax", "softmax")),
    ("matmul", ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear")),
    ("norm", ("layer_norm",)),
    ("embedding", ("embedding", "index_select")),
    ("elementwise", _ELEMENTWISE_OPS),
)


def op_class_of(name: str) -> str:
    """The op class of an aten op name ('other' when it matches none)."""
    return next((op_class for op_class, patterns in _CLASS_PATTERNS if any(p in name for p in patterns)), "other")
