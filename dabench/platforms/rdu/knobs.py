"""Knobs of the SambaNova RDU model (platforms/rdu/model.py); values in conf/hardware/rdu.yaml (SN30)
and sn40l.yaml, their provenance in conf/hardware/sources/ (a fitted knob's prior: here)."""

from __future__ import annotations

from dataclasses import dataclass

from dabench.fit.sources import Provenance
from dabench.perfmodel.knobs import knob

COMPILE_MODES = ("o0", "o1", "o3")
ACCUMULATIONS = ("bf16sr", "fp32")  #: SambaFlow accumulation modes: bf16 with stochastic rounding, or fp32
#: the calibration points the four fitted knobs are fitted to, jointly (dabench/fit/points.csv)
FIT_POINTS = (
    "SN30-1600x1", "SN30-1600x6", "SN30-1600x12", "SN30-1600x24", "SN30-1600x36", "SN30-3200x1",
    "SN30-1280x36", "SN30-1024x24", "SN30-768x12", "SN30-480x12", "S2", "S3",
)  # fmt: skip


@dataclass(frozen=True)
class RduOptions:
    compile_mode: str = knob(choices=COMPILE_MODES, doc="o0 op per section | o1 fused layers | o3 whole graph")
    tiles: int = knob(integer=True, high=8, doc="tiles per model copy (--num-tiles)")
    resources_scaling: float = knob(low=0.0, high=1.0, doc="--resources-scaling-factors")
    pcu_lanes: int = knob(integer=True, doc="output features one PCU vectorises over")
    pcu_efficiency: float = knob(
        low=0.0,
        high=1.0,
        doc="share of a PCU's peak a pipelined stage sustains",
        prior=Provenance(bounds=(0.3, 1.0), points=FIT_POINTS),
    )
    stage_buffer_pmus: int = knob(integer=True, doc="buffers per stage, each one sample's output")
    section_switch_s: float = knob(
        low=0.0, unit="s", doc="loading one section", prior=Provenance(bounds=(1.0e-6, 1.0e-3), points=FIT_POINTS)
    )
    fp32_logits: bool = knob(boolean=True, doc="mixed precision: the loss reads fp32 logits (Model Zoo fp32_logits)")
    fp32_skip_add: bool = knob(boolean=True, doc="mixed precision: residual adds in fp32 (Model Zoo fp32_skip_add)")
    tiling_accum: str = knob(choices=ACCUMULATIONS, doc="accumulation of forward and data-gradient GEMM tiles")
    weight_grad_reduce: str = knob(choices=ACCUMULATIONS, doc="accumulation of weight gradients")
    reduce_on_rdu: bool = knob(boolean=True, doc="data-parallel gradients reduced RDU to RDU (--reduce-on-rdu)")
    host_overhead_s: float = knob(
        low=0.0, unit="s", doc="host time per optimizer step", prior=Provenance(bounds=(0.0, 3.0), points=FIT_POINTS)
    )
    host_logit_s: float = knob(
        low=0.0,
        unit="s",
        doc="host time per step per logit of one sequence (positions at the head x vocabulary)",
        prior=Provenance(bounds=(0.0, 1.0e-6), points=FIT_POINTS),
    )
    host_link_Bps: float = knob(low=0.0, unit="B/s", doc="host-to-RDU link")
    machine_collective_s: float = knob(
        low=0.0,
        doc="host-side cost of one collective between machines (staged through the hosts, not overlapped with "
        "sections)",
        unit="s",
    )


@dataclass(frozen=True, slots=True)
class RduKnobs:
    """The options resolved against the hardware spec, as platforms/rdu/model.py and rdu_host.py use them."""

    options: RduOptions  #: the resolved hardware.options
    pcus: int  #: per section (tiles and resources scaling applied)
    pmus: int
    chip_pcus: int
    chip_pmus: int
    pmu_bytes: float
    pcu_flops: float  #: 16-bit FLOP/s of one PCU (a 32-bit operation takes two)
    ddr_Bps: float
    tile32: bool  #: forward and data-gradient GEMMs accumulate in fp32
    wgrad32: bool  #: weight gradients accumulate in fp32
    #: the off-chip traffic of the weights (with their gradients), the saved activations and the
    #: optimizer state priced at their tier's bandwidth, as a share of DDR's: 1.0 where they live in
    #: DDR (every tensor on an SN30), less in a faster tier (platforms/rdu/model.py, ``place``)
    price: tuple[float, float, float] = (1.0, 1.0, 1.0)
