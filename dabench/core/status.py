"""The one status vocabulary: every recorded run ends with one ``dabench.status`` tag; each status
has its meaning, MLflow run state and whether a trial ending with it counts toward a study's
budget. The exceptions carry a status and a reason up to the tracker. docs/metrics.md, "Run statuses"."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Status(str, Enum):
    """The value of the ``dabench.status`` tag."""

    OK = "ok"
    OOM = "oom"
    CAPACITY = "capacity"
    COMPILE_ERROR = "compile_error"
    INVALID_CONFIG = "invalid_config"
    UNSUPPORTED = "unsupported"
    CRASHED = "crashed"
    INTERRUPTED = "interrupted"
    KILLED = "killed"
    TIMEOUT = "timeout"
    DISK_FULL = "disk_full"
    TRACKING_ERROR = "tracking_error"
    DIVERGED = "diverged"
    INVALID_RESULT = "invalid_result"
    INCOMPLETE_ARTIFACT = "incomplete_artifact"
    SKIPPED = "skipped"
    UNSTEADY = "unsteady"


FINISHED, FAILED, KILLED = "FINISHED", "FAILED", "KILLED"


@dataclass(frozen=True)
class StatusInfo:
    meaning: str
    mlflow_state: str  #: FINISHED, FAILED or KILLED
    counts_toward_budget: bool  #: does a trial with this status use up one of a study's trials


VOCABULARY: dict[Status, StatusInfo] = {
    Status.OK: StatusInfo("the run completed and its metrics are valid", FINISHED, True),
    Status.OOM: StatusInfo("the device ran out of memory while running", FAILED, True),
    Status.CAPACITY: StatusInfo(
        "the workload does not fit the hardware's memory (found before or "
        "instead of running; the reason names memory, need and size)",
        FAILED,
        True,
    ),
    Status.COMPILE_ERROR: StatusInfo("a vendor compiler (or torch.compile) refused the workload", FAILED, True),
    Status.INVALID_CONFIG: StatusInfo(
        "bad input, refused before any work (the reason names field, value and what is valid)", FAILED, True
    ),
    Status.UNSUPPORTED: StatusInfo(
        "the requested mode, precision or feature does not exist on this target or machine", FAILED, True
    ),
    Status.CRASHED: StatusInfo(
        "the workload or a runner raised unexpectedly or exited non-zero (the reason holds the error)", FAILED, True
    ),
    Status.INTERRUPTED: StatusInfo("stopped by the user or the scheduler (Ctrl-C, SIGTERM)", KILLED, False),
    Status.KILLED: StatusInfo("the process vanished without closing its run (found later by a reaper)", KILLED, False),
    Status.TIMEOUT: StatusInfo("the run exceeded its time limit and was stopped", FAILED, True),
    Status.DISK_FULL: StatusInfo("no space left to write artifacts or the run store", FAILED, False),
    Status.TRACKING_ERROR: StatusInfo("the run store (MLflow) could not record the run", FAILED, False),
    Status.DIVERGED: StatusInfo("a loss, throughput or metric is not finite (NaN or infinity)", FAILED, True),
    Status.INVALID_RESULT: StatusInfo(
        "a metric breaks a physical bound (e.g. an efficiency above 1.0, a roofline point above its roof)", FAILED, True
    ),
    Status.INCOMPLETE_ARTIFACT: StatusInfo("a vendor artifact is truncated or inconsistent", FAILED, False),
    Status.SKIPPED: StatusInfo(
        "a study trial closed before it ran: the sampler proposed a parameter set "
        "the study already holds (another worker ran or runs it)",
        KILLED,
        False,
    ),
    Status.UNSTEADY: StatusInfo(
        "a measured run's timed steps were disturbed (another process took its CPUs, steal time, "
        "steps spread): its numbers are recorded but not valid (the reason names the cause and what to do)",
        FAILED,
        True,
    ),
}


def parse(status: "Status | str") -> Status:
    """The Status for a tag value; ValueError naming the valid ones for anything else."""
    try:
        return Status(status)
    except ValueError:
        raise ValueError(f"unknown dabench status {status!r}; valid: {', '.join(s.value for s in Status)}") from None


def info(status: "Status | str") -> StatusInfo:
    return VOCABULARY[parse(status)]


def mlflow_state(status: "Status | str") -> str:
    """The MLflow run state a run with this status ends in: FINISHED, FAILED or KILLED."""
    return info(status).mlflow_state


def counts_toward_budget(status: "Status | str | None") -> bool:
    """Whether a trial ending with this status uses up one of a study's trials (None and unknown
    values count, as Optuna's own failures do)."""
    try:
        return info(status).counts_toward_budget
    except ValueError:
        return True


def is_ok(status: "Status | str | None") -> bool:
    return status is not None and (status is Status.OK or status == Status.OK.value)


class DabenchError(Exception):
    """An outcome other than ``ok``, with the reason to record; a subclass names its status in its
    class line (``class DiskFull(DabenchError, status=Status.DISK_FULL)``) or keeps its parent's."""

    status: Status = Status.CRASHED

    def __init_subclass__(cls, status: Status | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ConfigError(DabenchError, ValueError, status=Status.INVALID_CONFIG):
    """Bad input, refused before any work. The message names field, value and what is valid."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        where = field if value is None else f"{field}={value!r}"
        super().__init__(f"invalid config: {where}: {valid}" if where else f"invalid config: {valid}")


class UnsupportedError(DabenchError, status=Status.UNSUPPORTED):
    """The requested mode, precision or feature does not exist on this target or machine."""


class CapacityError(DabenchError, status=Status.CAPACITY):
    """The workload does not fit: which memory, how much is needed and how much there is."""

    def __init__(self, memory: str, needed_bytes: float, available_bytes: float, detail: str = ""):
        self.memory, self.needed_bytes, self.available_bytes = memory, needed_bytes, available_bytes
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"{memory} capacity exceeded: needs {needed_bytes / 2**20:,.1f} MiB, "
            f"has {available_bytes / 2**20:,.1f} MiB{extra}"
        )


class CompileError(DabenchError, status=Status.COMPILE_ERROR):
    """A vendor compiler (or torch.compile) refused the workload."""


class OutOfMemory(DabenchError, status=Status.OOM):
    """The device ran out of memory while running."""


class CrashedError(DabenchError, status=Status.CRASHED):
    """A runner process or rank died, hung past its timeout, or raised unexpectedly."""


class RunTimeout(DabenchError, status=Status.TIMEOUT):
    """The run exceeded its time limit."""


class DiskFull(DabenchError, status=Status.DISK_FULL):
    """No space left for artifacts or the run store."""


class Diverged(DabenchError, status=Status.DIVERGED):
    """A loss, throughput or metric is not finite."""


class InvalidResult(DabenchError, status=Status.INVALID_RESULT):
    """A metric breaks a physical bound (efficiency > 1, roofline point above its roof)."""


class IncompleteArtifact(DabenchError, status=Status.INCOMPLETE_ARTIFACT):
    """A vendor artifact is truncated or inconsistent."""
