"""The result check run before a run is recorded: pure functions of the metric dict (and the
roofline points), no I/O.
:func:`check_result` -> ``None`` or a :class:`CheckFailure` (``diverged``, ``invalid_result``);
nothing is clamped. Derivation: docs/metrics.md, "Tier 1" (Result check).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping

from dabench.core.status import Status

RELATIVE_TOLERANCE = 1e-6

#: metric names (after an optional ``predict.`` prefix) that are ratios bounded by 1.0
_BOUNDED_BY_ONE = re.compile(
    r"^(predict\.)?(tier1\.compute_efficiency|tier1\.bandwidth_efficiency(\..+)?|roofline\..+\.roof_share"
    r"|tier1\.allocation_ratio(\..+)?|tier1\.load_imbalance)$"
)
#: metric names that can never be negative
_NON_NEGATIVE = re.compile(
    r"^(predict\.)?(throughput\..+|step_time\..+|tier1\..+|perf\..+|work\..+|memory\..+|tier2\.comm_time_s.*"
    r"|tier2\.bubble_time_s|loss\..+_count)$"
)


#: metrics measured against a hardware ceiling (peak FLOP/s or bandwidth); a run whose ceilings
#: could not be calibrated records none of them (see dabench.host.ceilings, "uncalibrated")
_AGAINST_CEILING = re.compile(
    r"^(predict\.)?(tier1\.compute_efficiency|tier1\.bandwidth_efficiency(\..+)?|perf\.peak_tflops|roofline\.(?!step\.intensity$).+"
    r"|diagnosis\.memory_bound|predict\.rel_error\.tier1_compute_efficiency)$"
)


def without_ceiling_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """``metrics`` less those relative to the hardware's ceilings (efficiencies, roofline, peak,
    memory-bound flag): meaningless when the ceilings are uncalibrated (a new dict)."""
    return {k: v for k, v in metrics.items() if not _AGAINST_CEILING.match(k)}


@dataclass(frozen=True)
class CheckFailure:
    """Why a result may not be recorded as ok: the status to record and the reason."""

    status: Status
    reason: str


def non_finite(metrics: Mapping[str, float]) -> list[str]:
    """Names of the metrics whose value is NaN or infinite (sorted)."""
    return sorted(name for name, value in metrics.items() if not math.isfinite(value))


@lru_cache(maxsize=4096)
def _bound(name: str) -> int:
    """1: bounded above by 1.0; 0: never negative; -1: unbounded (cached per metric name). A band's
    ends (``<name>.lo``, ``<name>.hi``) are never negative; the bound of 1.0 holds the central value."""
    if _BOUNDED_BY_ONE.match(name) and not name.endswith((".lo", ".hi")):
        return 1
    return 0 if _NON_NEGATIVE.match(name) else -1


def bound_violations(metrics: Mapping[str, float]) -> list[str]:
    """'name=value (bound)' for each finite metric above 1.0 where 1.0 is its bound, or negative
    where it cannot be."""
    limit = 1.0 + RELATIVE_TOLERANCE  # NaN compares False below: reported by non_finite
    above = [f"{name}={value:.6g} (> 1.0)" for name, value in metrics.items() if value > limit and _bound(name) == 1]
    below = [f"{name}={value:.6g} (< 0)" for name, value in metrics.items() if value < 0 and _bound(name) >= 0]
    return sorted(above + below)


def roofline_violations(points: Iterable) -> list[str]:
    """'point: achieved > attainable' for each roofline point drawn above its roof. ``points`` are
    :class:`dabench.metrics.roofline.RooflinePoint` (any object with name, achieved, attainable)."""
    return [
        f"roofline point {p.name}: achieved {p.achieved / 1e12:.4g} TFLOP/s above its roof "
        f"{p.attainable / 1e12:.4g} TFLOP/s"
        for p in points
        # a non-finite one is reported by the metric check
        if p.achieved is not None
        and math.isfinite(p.achieved)
        and math.isfinite(p.attainable)
        and p.achieved > p.attainable * (1.0 + RELATIVE_TOLERANCE)
    ]


def check_result(
    metrics: Mapping[str, float], roofline_points: Iterable = (), loss: float | None = None
) -> CheckFailure | None:
    """None when the result may be recorded as ok; otherwise the status and reason. Non-finite
    values win over bound violations (a NaN says nothing about bounds)."""
    bad = non_finite(metrics)
    if loss is not None and not math.isfinite(float(loss)):
        bad = [f"loss={loss}"] + bad
    if bad:
        shown = ", ".join(f"{n}={metrics[n]}" if n in metrics else n for n in bad[:8])
        more = f" (+{len(bad) - 8} more)" if len(bad) > 8 else ""
        return CheckFailure(Status.DIVERGED, f"non-finite result: {shown}{more}")
    violations = bound_violations(metrics) + roofline_violations(roofline_points)
    if violations:
        more = f" (+{len(violations) - 8} more)" if len(violations) > 8 else ""
        return CheckFailure(
            Status.INVALID_RESULT, "result breaks a physical bound: " + "; ".join(violations[:8]) + more
        )
    return None
