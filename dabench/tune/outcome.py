"""What a trial job hands back to the sweeper through Hydra's JobReturn, and what the study is
told: :class:`JobOutcome`, a float (the objective: samples/s, NaN when the run was not ok)
carrying the run's status, reason, mode and the figures a sweep's results table shows, and, once
the sweeper has it, the folder its job ran in; picklable by value, so it crosses process and
machine boundaries (submitit, Ray) and the sweeper never reads a job's files.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from dabench.core.status import Status, is_ok


class JobOutcome(float):
    """``float(outcome)`` is the objective; ``status``, ``reason``, ``mode`` describe the run;
    ``job_dir`` is where its job ran (set by the sweeper)."""

    status: str
    reason: str
    mode: str | None
    figures: dict[str, Any]
    job_dir: str | None

    def __new__(
        cls,
        value: float,
        status: str,
        reason: str = "",
        mode: str | None = None,
        figures: Mapping[str, Any] | None = None,
        job_dir: str | None = None,
    ) -> "JobOutcome":
        outcome = super().__new__(cls, value)
        outcome.status, outcome.reason, outcome.mode = str(status), str(reason or ""), mode
        outcome.figures, outcome.job_dir = dict(figures or {}), job_dir
        return outcome

    def __reduce__(self):
        return (JobOutcome, (float(self), self.status, self.reason, self.mode, self.figures, self.job_dir))


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
    return JobOutcome(result.objective, status, result.reason, getattr(result, "mode", None), figures)


def outcome_of(value: Any, job_dir: str | None = None) -> JobOutcome:
    """A job's returned value -> the JobOutcome the study is told, ran in ``job_dir``: from a
    JobOutcome or a mapping with ``objective`` and ``status`` (``reason``, ``mode`` optional; a
    None objective is NaN); a bare number is ok when finite; anything else is a crash (no status
    came with it). A finite objective of a run that was not ok is NaN; a run ok without a finite
    one diverged."""
    try:
        if isinstance(value, Mapping) and "objective" in value and "status" in value:
            objective = math.nan if value["objective"] is None else value["objective"]
            value = JobOutcome(objective, value["status"], value.get("reason"), value.get("mode"))
        elif not isinstance(value, JobOutcome) and math.isfinite(float(value)):
            value = JobOutcome(value, Status.OK.value)
    except (TypeError, ValueError):  # an objective that is no number
        pass
    if not isinstance(value, JobOutcome):
        return JobOutcome(
            math.nan, Status.CRASHED.value, f"the task returned {value!r} without a status", job_dir=job_dir
        )
    objective, status = float(value), value.status
    if math.isfinite(objective) and not is_ok(status):
        objective = math.nan
    elif not math.isfinite(objective) and is_ok(status):
        status = Status.DIVERGED.value
    return JobOutcome(objective, status, value.reason, value.mode, value.figures, job_dir)
