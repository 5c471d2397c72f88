"""Knobs of the GPU roofline model (perfmodel/device.py) and of the cuda backend; values in
conf/hardware/cuda.yaml (cuda_h100.yaml and cuda_a100.yaml inherit them; each preset sets its
``generation``, which picks the efficiencies fitted to that generation's published runs; a fitted
knob's prior is declared here)."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.fit.sources import Provenance
from dabench.perfmodel.knobs import knob


@dataclass(frozen=True)
class CudaKnobs:
    tf32: bool = knob(
        boolean=True,
        doc="fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32); measure sets it, predict "
        "prices it (peak_flops.tf32 instead of fp32)",
    )
    generation: str = knob(
        choices=("hopper", "ampere", "blackwell", "cdna3"),
        doc="the GPU generation: hopper (H100, H200) prices at compute_efficiency and memory_efficiency, ampere (A100)"
        " at ampere_compute_efficiency and ampere_memory_efficiency; blackwell (B200) and cdna3 (MI300X), with no "
        "calibration point, at the middle of those efficiencies' fit bounds (perfmodel/device.py)",
    )
    compute_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="hopper: share of the datasheet peak large GEMMs reach",
        prior=Provenance(
            bounds=(0.2, 1.0),
            points=("MPT-H100-1B", "MPT-H100-3B", "MPT-H100-7B", "MPT-H100-13B", "MPT-H100-30B", "MPT-H100-70B"),
        ),
    )
    memory_efficiency: float = knob(
        low=0.0, high=1.0, doc="hopper: share of the datasheet HBM bandwidth streaming kernels reach"
    )
    ampere_compute_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="ampere: share of the datasheet peak large GEMMs reach",
        prior=Provenance(
            bounds=(0.2, 1.0),
            points=(
                "MEG-1.7B",
                "MEG-3.6B",
                "MEG-7.5B",
                "MEG-18B",
                "MEG-39B",
                "MEG-76B",
                "MEG-145B",
                "MEG-310B",
                "MEG-530B",
                "MEG-1T",
                "MPT-A100-1B",
                "MPT-A100-7B",
                "MPT-A100-13B",
                "MPT-A100-30B",
            ),  # fmt: skip
        ),
    )
    ampere_memory_efficiency: float = knob(
        low=0.0, high=1.0, doc="ampere: share of the datasheet HBM bandwidth streaming kernels reach"
    )
    allocator_margin: float = knob(
        low=0.0,
        high=1.0,
        doc="share of the predicted bytes per GPU added for the caching allocator (fragmentation, reserved but "
        "unallocated blocks); the capacity check counts it",
    )
    launch_s: float = knob(low=-1e-30, doc="seconds per kernel launch, per op and phase")
    matmul_half_flops: float = knob(
        low=-1e-30,
        doc="FLOPs at which a matmul op reaches half its large-GEMM rate (rate = peak * e_c * F / (F + this); 0 = "
        "every GEMM at e_c)",
    )
    gemm_tile_m: int = knob(
        integer=True,
        low=0,
        doc="rows of the output tile one SM computes per GEMM (with gemm_tile_n): a matmul runs at the share of "
        "the SMs' tile slots its output fills, the last tile and the last wave part empty",
    )
    gemm_tile_n: int = knob(integer=True, low=0, doc="columns of the GEMM output tile (gemm_tile_m)")
    recompute: str = knob(
        choices=("none", "full"),
        doc="activation recomputation (Megatron's full recompute, --recompute-method uniform): each decoder block's "
        "forward runs again before its backward, with its tensor-parallel all-reduces; predict prices it, the cuda"
        " backend does not run it",
    )
    attention: str = knob(
        choices=("flash", "materialized"),
        doc="flash: fused attention that never writes the seq x seq scores (torch SDPA, the cuda backend); "
        "materialized: the scores, probabilities and their gradients go through HBM (Megatron-LM 2021: fused "
        "scale-mask-softmax, attention dropout, no FlashAttention); predict prices it",
    )
    stage_tensor_degree: int = knob(
        integer=True,
        low=0,
        doc="parallel=pp or fsdp: Megatron tensor-parallel GPUs per pipeline stage or fsdp shard (chips = this x "
        "parallel.degree x parallel.replicas); 1 = none; predict only",
    )
    pipeline_chunks: int = knob(
        integer=True,
        low=0,
        doc="parallel=pp only: model chunks per GPU of Megatron's interleaved 1F1B schedule (layers per stage / "
        "--num-layers-per-virtual-pipeline-stage): the bubble shrinks and the stage-to-stage sends grow by this "
        "factor; 1 = no interleaving; predict only",
    )
