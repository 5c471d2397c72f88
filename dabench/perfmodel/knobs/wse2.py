"""Knobs of the Cerebras WSE-2 model (perfmodel/wse2.py). Values: conf/hardware/wse2.yaml's
options; where each comes from: conf/hardware/sources/wse2.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.perfmodel.knobs import knob, register

MODES = ("pipelined", "weight_streaming", "auto")


@register("wse2")
@dataclass(frozen=True)
class Wse2Knobs:
    # settings (a user's choice)
    execution_mode: str = knob(choices=MODES, doc="pipelined (R1.x) | weight_streaming (R2.x) | auto")
    replicas: int | str = knob(
        integer=True,
        choices=("auto",),
        doc="on-wafer copies of a pipelined model (intra-chip data parallel); auto = fastest",
    )
    # layer-pipelined
    region_pes: int = knob(
        integer=True, doc="PEs of the default compiled region; a model that does not fit gets the wafer"
    )
    region_fill: float = knob(low=0.0, high=1.0, doc="share of the compiled region's PEs the placer can use")
    clock_hz: float = knob(
        low=0.0,
        high=1e11,
        doc="PE clock, Hz, at most 100 GHz (the compile reports' per-kernel rates are multiples of it)",
    )
    token_period_cycles: float = knob(low=1.0, doc="cycles a pipelined kernel spends per token at the compile's rate")
    pipelined_pe_efficiency: float = knob(
        low=0.0, high=1.0, doc="share of peak / PEs an allocated PE sustains on a very wide layer"
    )
    pipelined_half_width: float = knob(
        low=0.0, doc="hidden width at which a kernel's PEs reach half of pipelined_pe_efficiency"
    )
    fabric_bandwidth_Bps: float = knob(low=0.0, doc="on-wafer fabric bandwidth, bytes/s")
    fabric_hop_latency_s: float = knob(low=0.0, doc="latency of one replica-to-replica hop of the gradient ring, s")
    # weight streaming
    ws_pe_efficiency: float = knob(
        low=0.0, high=1.0, doc="share of peak a streamed layer's compute sustains on the whole wafer"
    )
    ws_layer_latency_s: float = knob(
        low=0.0, doc="time per layer and pass (forward or backward) that compute and streaming do not hide, s"
    )
    # precision
    fp16_loss_scaling_overhead: float = knob(
        low=-1e-12, high=1.0, doc="fp16 (dynamic loss scaling): extra share of backward time"
    )


@dataclass(frozen=True)
class Wse2Params:
    """The model's inputs: the typed knobs plus the hardware spec's numbers."""

    knobs: Wse2Knobs
    region_pes: int
    wafer_pes: int
    pe_flops: float
    sram_bytes: float
    memoryx_Bps: float
    bwd_weight: float  #: 1 + loss-scaling overhead under fp16
    fill: float  #: width_fill of the model's hidden size
