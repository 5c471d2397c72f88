"""Knobs of the GPU roofline model (perfmodel/device.py) and of the cuda backend; values in
conf/hardware/cuda.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.perfmodel.knobs import knob, register


@register("cuda")
@dataclass(frozen=True)
class CudaKnobs:
    tf32: bool = knob(boolean=True, doc="fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32); "
                                        "measure sets it, predict prices it (peak_flops.tf32 instead of fp32)")
    compute_efficiency: float = knob(low=0.0, high=1.0, doc="share of the datasheet peak large GEMMs reach")
    memory_efficiency: float = knob(low=0.0, high=1.0, doc="share of the datasheet HBM bandwidth streaming kernels reach")
    launch_s: float = knob(low=-1e-30, doc="seconds per kernel launch, per op and phase")
