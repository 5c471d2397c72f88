"""What a trial job hands back to the sweeper through Hydra's JobReturn: :class:`JobOutcome`, a
float (the objective: samples/s, NaN when the run was not ok) carrying the run's status, reason,
mode and the figures a sweep's results table shows; picklable by value, so it crosses process and
machine boundaries (submitit, Ray) and the sweeper never reads a job's files.
"""

from __future__ import annotations

from typing import Any, Mapping


class JobOutcome(float):
    """``float(outcome)`` is the objective; ``status``, ``reason``, ``mode`` describe the run."""

    status: str
    reason: str
    mode: str | None
    figures: dict[str, Any]

    def __new__(
        cls,
        value: float,
        status: str,
        reason: str = "",
        mode: str | None = None,
        figures: Mapping[str, Any] | None = None,
    ) -> "JobOutcome":
        outcome = super().__new__(cls, value)
        outcome.status, outcome.reason, outcome.mode = str(status), str(reason or ""), mode
        outcome.figures = dict(figures or {})
        return outcome

    def __reduce__(self):
        return (JobOutcome, (float(self), self.status, self.reason, self.mode, self.figures))


#: the metrics a sweep's results table shows (dabench/report/results.py) besides samples/s
TABLE_METRICS = (
    "step_time.median_s",
    "throughput.samples_per_s.lo",
    "throughput.samples_per_s.hi",
    "tier1.load_imbalance",
    "tier1.allocation_ratio",
)


def job_outcome(result: Any) -> JobOutcome:
    """The JobOutcome of a dabench RunResult (``objective``, ``status``, ``reason``, ``mode``, and
    the results table's figures)."""
    status = getattr(result.status, "value", result.status)
    metrics = getattr(result, "metrics", None) or {}
    figures: dict[str, Any] = {k: float(metrics[k]) for k in TABLE_METRICS if isinstance(metrics.get(k), (int, float))}
    diagnosis = getattr(result, "diagnosis", None)
    if diagnosis:
        figures["diagnosis"] = str(diagnosis[0])
    return JobOutcome(result.objective, status, result.reason or "", getattr(result, "mode", None), figures)
