"""Knobs of the Cerebras WSE-2 model (platforms/wse/model.py). Values: conf/hardware/wse2.yaml's
options; where each comes from: conf/hardware/sources/wse2.yaml (a fitted knob's prior: here)."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.fit.sources import Provenance
from dabench.perfmodel.knobs import knob

MODES = ("pipelined", "weight_streaming", "auto")
#: Cerebras software releases of the calibration points, oldest first (sources/wse2.yaml, options.sdk_release)
RELEASES = ("1.6.0", "1.7.1", "1.8.0", "2.0.2", "2.0.3", "2.1.0", "2.2.0", "2.3.0")
#: the weight-streaming calibration points (dabench/fit/points.csv) its two knobs are fitted to
WS_POINTS = ("C5", "C9", "C10", "C11")


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
    fabric_values_per_cycle: float = knob(
        low=0.0, doc="16-bit values per clock one kernel passes the next (the LM head's logits set the pace)"
    )
    compile_estimate: bool = knob(
        boolean=True, doc="price the steady rate a compile report prints (no per-step pipeline fill and drain)"
    )
    pe_flops_matmul: float = knob(low=0.0, doc="FLOP/s one PE of a matmul kernel sustains at d_model 256")
    pe_flops_attention: float = knob(low=0.0, doc="FLOP/s one PE of an attention core sustains at d_model 256")
    pe_flops_loss: float = knob(low=0.0, doc="FLOP/s one PE of the loss kernel sustains")
    pe_flops_embedding: float = knob(low=0.0, doc="FLOP/s one PE of an embedding kernel sustains")
    pe_flops_elementwise: float = knob(low=0.0, doc="FLOP/s one PE of a norm, add or dropout kernel sustains")
    fabric_bandwidth_Bps: float = knob(low=0.0, unit="B/s", doc="on-wafer fabric bandwidth")
    fabric_hop_latency_s: float = knob(
        low=0.0, unit="s", doc="latency of one replica-to-replica hop of the gradient ring"
    )
    # weight streaming
    ws_pe_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="share of peak a streamed layer's compute sustains on the whole wafer",
        prior=Provenance(bounds=(0.01, 1.0), points=WS_POINTS),
    )
    ws_layer_latency_s: float = knob(
        low=0.0,
        unit="s",
        doc="time per layer and pass (forward or backward) that compute and streaming do not hide",
        prior=Provenance(bounds=(0.0, 0.05), points=WS_POINTS),
    )
    # software release
    sdk_release: str = knob(choices=RELEASES, doc="Cerebras release the run uses (default: the calibration's newest)")
    release_speedup_2_0_2: float = knob(
        low=0.0, doc="weight-streaming speed of Release 2.0.2 and later over the release before"
    )
    # precision
    fp16_loss_scaling_overhead: float = knob(
        low=-1e-12,
        high=1.0,
        doc="fp16 (dynamic loss scaling): extra share of backward time",
        prior=Provenance(bounds=(0.0, 1.0), points=("WSE-MP",)),  # the paper's mixed-precision gain
    )


@dataclass(frozen=True)
class Wse2Params:
    """The model's inputs: the typed knobs plus the hardware spec's numbers."""

    knobs: Wse2Knobs
    wafer_pes: int
    pe_flops: float  #: peak FLOP/s per PE
    pe_rates: dict[str, float]  #: pipelined FLOP/s per PE by op class
    sram_bytes: float
    memoryx_Bps: float
    bwd_weight: float  #: 1 + loss-scaling overhead under fp16
    release_slowdown: float  #: weight-streaming step of sdk_release over the calibration's newest release
