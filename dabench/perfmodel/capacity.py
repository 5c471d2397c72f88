"""Memory capacity accounting for training (:func:`training_state`) and the hard capacity check
(:func:`require_fits`: CapacityError, a ``capacity`` result, not a crash).
Derivation: docs/perfmodel.md, "Shared primitives".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from dabench.config.sections import PrecisionConfig
from dabench.core.status import CapacityError


@dataclass(frozen=True)
class MemoryUse:
    """Bytes in use at the peak, by kind (``other``: buffers such as communication buckets;
    ``margin``: what the allocator reserves beyond the rest)."""

    weights: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    activations: float = 0.0
    other: float = 0.0
    margin: float = 0.0

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.other + self.margin

    def plus(self, activations: float = 0.0, other: float = 0.0) -> "MemoryUse":
        return dataclasses.replace(self, activations=self.activations + activations, other=self.other + other)

    def parts(self) -> dict[str, float]:
        """kind -> bytes, every kind (the metrics memory.part_bytes.<level>.<kind>)."""
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """'weights 1.2 GiB + gradients ...' for capacity error messages."""
        return " + ".join(f"{kind} {value / 2**30:.2f} GiB" for kind, value in self.parts().items() if value)


def training_state(
    params: float,
    precision: PrecisionConfig,
    *,
    compute_copy: bool = False,
    grad_bytes: float | None = None,
    moment_bytes: tuple[float, float] | None = None,
) -> MemoryUse:
    """Weights (plus a 16-bit working copy with ``compute_copy``), gradients and AdamW moments of
    ``params`` parameters."""
    w = precision.param_bytes
    copy = precision.compute_bytes if (compute_copy and precision.autocast) else 0
    g = w if grad_bytes is None else grad_bytes
    m1, m2 = (w, w) if moment_bytes is None else moment_bytes
    return MemoryUse(weights=params * (w + copy), gradients=params * g, optimizer=params * (m1 + m2))


def require_fits(memory: str, needed_bytes: float, available_bytes: float, detail: str = "") -> None:
    """Raise CapacityError(memory, needed, available, detail) when needed > available."""
    if needed_bytes > available_bytes:
        raise CapacityError(memory, needed_bytes, available_bytes, detail)
