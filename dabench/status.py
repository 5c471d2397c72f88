"""Run statuses and the exceptions that carry them.

Every run dabench records ends with one ``dabench.status`` tag. A failure is a result: the
exceptions below carry the status and a human-readable reason up to the tracker, which records
the run instead of losing it.
"""

from __future__ import annotations

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


class DabenchError(Exception):
    """Base class: an outcome other than ``ok``, with the reason to record."""

    status: Status = Status.CRASHED

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ConfigError(DabenchError, ValueError):
    """Bad input, refused before any work. The message names field, value and what is valid."""

    status = Status.INVALID_CONFIG

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(f"invalid config: {field}={value!r}: {valid}")


class UnsupportedError(DabenchError):
    """The requested mode, precision or feature does not exist on this target or machine."""

    status = Status.UNSUPPORTED


class CapacityError(DabenchError):
    """The workload does not fit: which memory, how much is needed and how much there is."""

    status = Status.CAPACITY

    def __init__(self, memory: str, needed_bytes: float, available_bytes: float, detail: str = ""):
        self.memory, self.needed_bytes, self.available_bytes = memory, needed_bytes, available_bytes
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"{memory} capacity exceeded: needs {needed_bytes / 2**20:,.1f} MiB, "
            f"has {available_bytes / 2**20:,.1f} MiB{extra}"
        )


class CompileError(DabenchError):
    """A vendor compiler (or torch.compile) refused the workload."""

    status = Status.COMPILE_ERROR


class OutOfMemory(DabenchError):
    """The device ran out of memory while running."""

    status = Status.OOM


class CrashedError(DabenchError):
    """A runner process or rank died, hung past its timeout, or raised unexpectedly."""

    status = Status.CRASHED
