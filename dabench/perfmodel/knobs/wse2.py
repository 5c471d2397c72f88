"""Knobs of the Cerebras WSE-2 model (perfmodel/wse2.py); values in conf/hardware/wse2.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.perfmodel.knobs import knob, register

MODES = ("pipelined", "weight_streaming", "auto")


@register("wse2")
@dataclass(frozen=True)
class Wse2Knobs:
    execution_mode: str = knob(choices=MODES, doc="pipelined (R1.x) | weight_streaming (R2.x) | auto")
    replicas: int | str = knob(integer=True, choices=("auto",),
                               doc="on-wafer copies of a pipelined model; auto = as many as the compiler would make")
    kernel_compute_utilization: float = knob(low=0.0, high=1.0, doc="share of a kernel's PE peak it sustains")
    min_weights_per_pe: float = knob(low=0.0, doc="a weight-owning kernel spreads over at most params / this PEs")
    stash_samples_per_hop: float = knob(low=0.0, doc="samples a kernel holds in flight (forward-to-backward stash)")
    fabric_bandwidth_Bps: float = knob(low=0.0, doc="on-wafer fabric bandwidth, bytes/s")
    fabric_hop_latency_s: float = knob(low=0.0, doc="latency of one replica-to-replica hop, s")
