"""Knobs of the CPU roofline model (perfmodel/device.py); values in conf/hardware/cpu.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.perfmodel.knobs import knob


@dataclass(frozen=True)
class CpuKnobs:
    compute_efficiency: float = knob(
        low=0.0, high=1.0, doc="share of the calibrated matmul peak a large matmul op reaches"
    )
    memory_efficiency: float = knob(
        low=0.0, high=1.0, doc="share of the calibrated copy bandwidth a streaming op reaches"
    )
    launch_s: float = knob(low=-1e-30, doc="seconds of framework dispatch + autograd per op and phase")
    matmul_half_flops: float = knob(
        low=-1e-30,
        doc="FLOPs at which a matmul op reaches half its large-matmul rate (small matmuls run below peak: rate = peak "
        "* F / (F + this))",
    )
    attention_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="share of the calibrated matmul peak torch's CPU flash-attention kernel reaches (its per-block GEMMs are "
        "head_dim wide, with the online softmax between them)",
    )
    gelu_element_flops: float = knob(
        low=-1e-30,
        doc="matmul-FLOP equivalents of one GELU element, forward or backward: the tanh evaluation makes GELU "
        "compute-bound, priced at elements x this / peak (0 = off: bytes only)",
    )
    emulated_compute_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="factor on compute_efficiency for a precision this CPU emulates (no native arithmetic, e.g. bf16 without "
        "AVX512-BF16)",
    )
    emulated_memory_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="factor on memory_efficiency for a precision this CPU emulates (torch's 16-bit element-wise kernels "
        "convert around each op)",
    )
