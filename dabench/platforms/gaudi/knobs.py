"""Knobs of the Gaudi roofline model (perfmodel/device.py) and of the hpu backend; values in
conf/hardware/gaudi2.yaml (gaudi3.yaml inherits them and sets its own ``vector_flops``)."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.perfmodel.knobs import knob


@dataclass(frozen=True)
class GaudiKnobs:
    compute_efficiency: float = knob(low=0.0, high=1.0, doc="share of the MME's datasheet peak large GEMMs reach")
    memory_efficiency: float = knob(
        low=0.0, high=1.0, doc="share of the datasheet HBM bandwidth streaming (TPC) ops reach"
    )
    vector_flops: float = knob(
        low=-1e-30,
        doc="BF16 vector FLOP/s of all tensor processor cores (TPC): every op but matmul and attention is priced "
        "at it, not at the MME peak",
    )
    launch_s: float = knob(low=-1e-30, doc="seconds per op and phase outside the fused graph's compute")
    allocator_margin: float = knob(
        low=0.0,
        high=1.0,
        doc="share of the predicted bytes per chip added for allocator slack; the capacity check counts it",
    )
    recompute: str = knob(
        choices=("none", "full"),
        doc="full activation recomputation: each decoder block's forward runs again before its backward; predict only",
    )
    stage_tensor_degree: int = knob(
        integer=True,
        low=0,
        doc="parallel=pp or fsdp: tensor-parallel chips per pipeline stage or fsdp shard; 1 = none; predict only",
    )
