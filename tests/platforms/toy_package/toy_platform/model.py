"""The toy's model: a step is the op graph's FLOPs at ``efficiency`` x the peak, or its bytes at
the memory's bandwidth, whichever takes longer."""

from dataclasses import dataclass

from dabench.perfmodel.assemble import make_profile, peak_flops
from dabench.perfmodel.knobs import knob, knobs_for


@dataclass(frozen=True)
class ToyOptions:
    efficiency: float = knob(low=0.0, high=1.0, doc="share of the peak every op sustains")


def predict(rc, graph, ceilings):
    compute_s = graph.flops() / (peak_flops(rc) * knobs_for(rc.hardware).efficiency)
    step_s = rc.run.grad_accum * max(compute_s, graph.bytes() / rc.hardware.memory_level("hbm").bandwidth_Bps)
    return make_profile(rc, "toy", step_s, subtask_kind="layer", units={}, subtasks=[], memory={})
