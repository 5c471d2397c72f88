"""Memory capacity accounting for training, per precision, and the hard capacity check.

Bytes for P parameters (AdamW, as the workload's optimizer):

- weights     = P * w, w = bytes of the stored parameter dtype (4 for fp32 and for the fp32
  master weights of ``mixed``, 2 for fp16/bf16), plus P * c for a 16-bit working copy where the
  target keeps one (``mixed`` with ``compute_copy=True``: WSE-2 and IPU hold both copies);
- gradients   = P * g, g = w unless the target accumulates in another dtype (``grad_bytes``);
- optimizer   = P * (m1 + m2), both moments in the parameter dtype unless given (``moment_bytes``:
  e.g. Graphcore's GPT-2 example keeps the first moment in fp16 and the second in fp32);
- activations = whatever the model says is alive at the peak (saved tensors, pipeline stash,
  recompute working set); ``other`` = program code, buffers, temporaries.

:func:`require_fits` raises :class:`~dabench.core.status.CapacityError` naming the memory, the bytes
needed and the bytes available: a run that does not fit is a ``capacity`` result, not a crash.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dabench.config.sections import PrecisionConfig
from dabench.core.status import CapacityError


@dataclass(frozen=True)
class MemoryUse:
    """Bytes in use at the peak, by kind."""

    weights: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    activations: float = 0.0
    other: float = 0.0

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.other

    def plus(self, activations: float = 0.0, other: float = 0.0) -> "MemoryUse":
        return MemoryUse(self.weights, self.gradients, self.optimizer, self.activations + activations,
                         self.other + other)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def describe(self) -> str:
        """'weights 1.2 GiB + gradients ...' for capacity error messages."""
        return " + ".join(f"{kind} {value / 2**30:.2f} GiB" for kind, value in asdict(self).items() if value)


def training_state(params: float, precision: PrecisionConfig, *, compute_copy: bool = False,
                   grad_bytes: float | None = None, moment_bytes: tuple[float, float] | None = None) -> MemoryUse:
    """Weights, gradients and AdamW moments of ``params`` parameters; see the module docstring."""
    w = precision.param_bytes
    copy = precision.compute_bytes if (compute_copy and precision.autocast) else 0
    g = w if grad_bytes is None else grad_bytes
    m1, m2 = (w, w) if moment_bytes is None else moment_bytes
    return MemoryUse(weights=params * (w + copy), gradients=params * g, optimizer=params * (m1 + m2))


def require_fits(memory: str, needed_bytes: float, available_bytes: float, detail: str = "") -> None:
    """Raise CapacityError(memory, needed, available, detail) when needed > available."""
    if needed_bytes > available_bytes:
        raise CapacityError(memory, needed_bytes, available_bytes, detail)
