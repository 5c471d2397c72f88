"""Knobs of the Graphcore Bow IPU model (platforms/ipu/model.py); values in conf/hardware/ipu.yaml,
their provenance in conf/hardware/sources/ipu.yaml (a fitted knob's prior: here)."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.fit.sources import Provenance
from dabench.perfmodel.knobs import knob

#: the MLPerf BERT submissions that fit the AMP's efficiency and the per-call cost together: the
#: same placement at gradient accumulation 256, 96, 64 and 36 separates time per micro-batch from
#: time per step
MLPERF = ("G2", "G3", "G4", "G6", "G7", "G8", "G9")


@dataclass(frozen=True)
class IpuOptions:
    device_iterations: int = knob(integer=True, doc="optimizer steps per host call (PopTorch deviceIterations)")
    available_memory_proportion: float = knob(
        low=0.0, high=1.0, doc="matmul planner's share of IPU memory for temporaries (--matmul-proportion)"
    )
    clock_hz: float = knob(low=0.0, high=1e11, doc="IPU clock, Hz (no chip clocks above 100 GHz)")
    exchange_bandwidth_Bps: float = knob(low=0.0, unit="B/s", doc="on-chip exchange bandwidth per IPU")
    amp_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="share of the AMP peak a matmul's compute phase reaches",
        prior=Provenance(bounds=(0.3, 1.0), points=MLPERF),
    )
    vector_flops_per_cycle: float = knob(low=0.0, doc="non-matmul FLOPs per tile per cycle")
    loadstore_bytes_per_cycle: float = knob(low=0.0, doc="bytes a tile's vector work loads or stores per cycle")
    superstep_s: float = knob(low=0.0, unit="s", doc="one BSP superstep's fixed cost (tile sync, exchange start-up)")
    program_memory_fraction: float = knob(low=0.0, high=1.0, doc="vertex/exchange code and buffers, share of memory")
    recompute: bool = knob(boolean=True, doc="--recompute-checkpoint-every-layer")
    optimizer_state_offchip: bool = knob(boolean=True, doc="AdamW moments in streaming memory")
    replicated_tensor_sharding: bool = knob(boolean=True, doc="shard optimizer state over replicas")
    ipu_link_domain: int = knob(
        integer=True, doc="IPUs joined by IPU-Links (one Pod rack); pipelines and rings beyond it use GW-Links"
    )
    host_call_overhead_s: float = knob(
        low=0.0,
        unit="s",
        doc="fixed cost of one host call (one step at device_iterations 1): host exchange, sync, the runtime",
        prior=Provenance(bounds=(1.0e-4, 0.5), points=MLPERF),
    )
    embedding_serialization_factor: int = knob(integer=True, doc="LM head computed in this many vocabulary slices")
    half_partials: bool = knob(
        boolean=True,
        doc="fp16 matmul partials (FP16.16, --enable-half-partials); false: fp32 partials (FP16.32), the AMP at half "
        "the FP16.16 rate; 16-bit runs only",
    )
