"""The training step on a torch device, shared by the cpu and cuda backends: ``grad_accum``
micro-batches of forward + backward (loss / grad_accum), then AdamW and zero_grad; ``mixed``
keeps the weights in fp32 and autocasts to ``precision.compute_dtype``; ``fp8`` keeps them in bf16
and runs the decoder blocks' linears through ``torch._scaled_mm`` (:class:`Fp8Linear`) on a GPU
:func:`fp8_unsupported` accepts, UnsupportedError elsewhere.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from dabench.config.sections import FP8, RunConfig
from dabench.core.status import UnsupportedError
from dabench.host.ceilings import tf32_enabled
from dabench.workload.model import DecoderStack, synthetic_batch

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


FP8_CAPABILITY = (8, 9)  #: CUDA compute capability of the first FP8 tensor cores (Ada, Hopper 9.0)
AMAX_HISTORY = 16  #: steps of amax each tensor's scale is taken from (delayed scaling)


def fp8_unsupported(device: torch.device, dims: tuple[int, ...] = ()) -> str | None:
    """Why this torch cannot run FP8 GEMMs on ``device`` (None: it can); ``dims`` (GEMM sizes) must be
    multiples of 16, as ``torch._scaled_mm`` requires."""
    if device.type != "cuda":
        return f"precision=fp8 is measured on a CUDA GPU with FP8 tensor cores only (this run: {device.type})"
    if not hasattr(torch, "_scaled_mm"):
        return f"precision=fp8: torch {torch.__version__} has no FP8 GEMM (torch._scaled_mm)"
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) < FP8_CAPABILITY:
        name = torch.cuda.get_device_name(device)
        return f"precision=fp8 needs compute capability >= 8.9 (FP8 tensor cores); {name} is {major}.{minor}"
    odd = [d for d in dims if d % 16]
    if odd:
        return f"precision=fp8: torch._scaled_mm needs GEMM sizes divisible by 16 (tokens and widths; {odd[0]} is not)"
    return None


def _fp8_formats() -> tuple[torch.dtype, torch.dtype]:
    """(forward, gradient) FP8 dtypes: E4M3 and E5M2 (ROCm's MI300 takes their ``fnuz`` variants)."""
    if torch.version.hip:
        return torch.float8_e4m3fnuz, torch.float8_e5m2fnuz
    return torch.float8_e4m3fn, torch.float8_e5m2


class Fp8Scales(torch.nn.Module):
    """Delayed per-tensor scaling of one linear's X, W and dY: each cast scales by the format's
    largest value over the amax of the tensor's last :data:`AMAX_HISTORY` casts (1 before the first)
    and records the new amax."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("history", torch.zeros(3, AMAX_HISTORY))

    def cast(self, i: int, t: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(``t`` in ``dtype``, the fp32 scale that undoes the cast)."""
        top = torch.finfo(dtype).max
        amax = self.history[i].max()
        scale = torch.where(amax > 0, top / amax, torch.ones_like(amax))
        q = (t.float() * scale).clamp(-top, top).to(dtype)
        self.history[i] = torch.cat([t.detach().abs().max().float().view(1), self.history[i, :-1]])
        return q, scale.reciprocal()


class _Fp8Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, scales):
        e4m3, _ = _fp8_formats()
        x2 = x.reshape(-1, x.shape[-1])
        x8, sx = scales.cast(0, x2, e4m3)
        w8, sw = scales.cast(1, weight, e4m3)
        y = torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw, out_dtype=x.dtype)
        ctx.save_for_backward(x8, w8, sx, sw)
        ctx.scales, ctx.shape, ctx.bias = scales, x.shape, bias is not None
        return (y if bias is None else y + bias).reshape(*x.shape[:-1], -1)

    @staticmethod
    def backward(ctx, dy):
        x8, w8, sx, sw = ctx.saved_tensors
        _, e5m2 = _fp8_formats()
        dy2 = dy.reshape(-1, dy.shape[-1])
        g8, sg = ctx.scales.cast(2, dy2, e5m2)
        # dX = dY W and dW = dY^T X: the first operand row-major, the second column-major
        dx = torch._scaled_mm(g8, w8.t().contiguous().t(), scale_a=sg, scale_b=sw, out_dtype=dy.dtype)
        dw = torch._scaled_mm(g8.t().contiguous(), x8.t().contiguous().t(), scale_a=sg, scale_b=sx, out_dtype=dy.dtype)
        return dx.reshape(ctx.shape), dw, dy2.sum(0) if ctx.bias else None, None


class Fp8Linear(torch.nn.Module):
    """``linear``'s parameters, its GEMMs in FP8 (E4M3 forward, E5M2 output gradient, bf16 output)."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.weight, self.bias, self.scales = linear.weight, linear.bias, Fp8Scales()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Fp8Matmul.apply(x, self.weight, self.bias, self.scales)


def to_fp8(model: DecoderStack) -> DecoderStack:
    """``model`` with every linear of its decoder blocks an :class:`Fp8Linear` (the embedding and LM
    head stay bf16, as the predicted op graph prices them)."""
    for block in model.blocks:
        for parent in list(block.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, torch.nn.Linear):
                    setattr(parent, name, Fp8Linear(child).to(child.weight.device))
    return model


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
    if rc.precision.name == FP8:
        m = rc.model
        why = fp8_unsupported(
            device, (rc.run.batch_size * m.seq_len, m.hidden_size, m.ffn_hidden, m.kv_heads * m.head_dim)
        )
        if why:
            raise UnsupportedError(why)
        model = to_fp8(model)
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
