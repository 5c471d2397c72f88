"""One bottleneck label per run, with the numbers behind it."""

from __future__ import annotations

COMM_BOUND_FRACTION = 0.30  #: communication share of the step above which a run is comm-bound
HOST_BOUND_FRACTION = 0.50  #: host share of the step above which a run is host-bound
IMBALANCE_BOUND_LI = 0.60  #: LI below which concurrently running subtasks bound the run
LATENCY_BOUND_SHARE = 0.10  #: achieved / attainable FLOP/s below which neither roof explains the run


def diagnose(
    *,
    comm_fraction: float | None,
    host_fraction: float | None,
    load_imbalance: float | None,
    subtasks_concurrent: bool,
    intensity: float,
    ridge: float,
    roof_share: float | None = None,
) -> tuple[str, str]:
    """Return (label, reason): host-, communication-, imbalance- (concurrent subtasks only),
    latency-, memory-bandwidth- or compute-bound, checked in that order (docs/metrics.md)."""
    if host_fraction is not None and host_fraction > HOST_BOUND_FRACTION:
        return "host-bound", f"host time is {host_fraction:.0%} of the step"
    if comm_fraction is not None and comm_fraction > COMM_BOUND_FRACTION:
        return "communication-bound", f"communication is {comm_fraction:.0%} of the step"
    if subtasks_concurrent and load_imbalance is not None and load_imbalance < IMBALANCE_BOUND_LI:
        return "imbalance-bound", f"load imbalance LI={load_imbalance:.2f} < {IMBALANCE_BOUND_LI}"
    if roof_share is not None and roof_share < LATENCY_BOUND_SHARE:
        reason = f"achieved {roof_share:.1%} of the attainable FLOP/s at intensity {intensity:.1f} FLOP/B"
        return "latency-bound", reason
    if intensity < ridge:
        return "memory-bandwidth-bound", f"step intensity {intensity:.1f} FLOP/B < ridge {ridge:.1f} FLOP/B"
    return "compute-bound", f"step intensity {intensity:.1f} FLOP/B >= ridge {ridge:.1f} FLOP/B"
