"""What a vendor artifact says, before it becomes a :class:`~dabench.core.profile.Profile`.

:class:`ArtifactReport` holds what any vendor format reports without inventing what is missing,
computes the Tier-1 metrics the source supports (MLflow names) and converts to a Profile when the
run's step times are known. Formats and metrics: docs/vendors.md, "Artifact parsers".
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dabench.core.profile import Profile, Subtask, UnitUse
from dabench.ingest.config import StatedConfig
from dabench.metrics import tier1

#: how ``throughput.samples_per_s`` was obtained
MEASURED = "measured"
COMPILER_ESTIMATE = "compiler_estimate"


@dataclass
class ArtifactSubtask:
    """One kernel (WSE), section stage (RDU) or pipeline stage (IPU). Exactly what the source
    reports: ``time_s`` (seconds per step), ``rate`` (samples/s) and/or ``cycles`` (device clock
    cycles, when the clock is unknown). ``units`` per resource kind, ``group`` a class label
    (e.g. kernel class attention/fc/...), ``utilization`` a fraction where the vendor gives one."""

    name: str
    time_s: float | None = None
    rate: float | None = None
    cycles: float | None = None
    units: dict[str, float] = field(default_factory=dict)
    group: str | None = None
    utilization: float | None = None

    def cost(self) -> float | None:
        """A quantity proportional to this subtask's time per sample: time_s, cycles or 1/rate."""
        if self.time_s is not None:
            return self.time_s
        if self.cycles is not None:
            return self.cycles
        if self.rate:
            return 1.0 / self.rate
        return None


@dataclass
class ArtifactReport:
    """Parsed vendor artifacts: ``source`` the detected format, ``files`` those read,
    ``load_imbalance`` where the source needs its own formula (else mean/max of subtask costs),
    ``extra`` vendor metrics, ``info`` string facts for tags, ``details`` JSON-only tables."""

    source: str
    files: list[str] = field(default_factory=list)
    subtask_kind: str = "kernel"
    units: dict[str, UnitUse] = field(default_factory=dict)
    subtasks: list[ArtifactSubtask] = field(default_factory=list)
    bottleneck: str | None = None
    samples_per_s: float | None = None
    throughput_basis: str | None = None
    step_times_s: list[float] = field(default_factory=list)
    samples_per_step: int | None = None
    chips: int = 1
    memory_bytes: dict[str, float] = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)
    load_imbalance: float | None = None
    load_imbalance_basis: str | None = None
    extra: dict[str, float] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: why the artifact is truncated or inconsistent (empty = complete); a report with problems is
    #: ingested with ``dabench.status=incomplete_artifact`` and these as the reason, never ok
    problems: list[str] = field(default_factory=list)
    #: entries of an artifact folder that were not read, with the reason (links, fifos, limits)
    skipped: list[str] = field(default_factory=list)
    #: the run configuration the artifact states (dabench config keys) and what it does not
    stated: StatedConfig = field(default_factory=StatedConfig)

    @property
    def status(self) -> str:
        """``ok`` or ``incomplete_artifact`` (a :class:`~dabench.core.status.Status` value)."""
        return "incomplete_artifact" if self.problems else "ok"

    @property
    def reason(self) -> str:
        return "; ".join(self.problems)

    def read_json(self, path: Path, label: str, default: Any) -> Any:
        """A JSON file's content, ``default`` when the file is empty; a cut or invalid one adds a
        problem naming it by ``label`` and gives ``default``."""
        text = path.read_text(errors="replace")
        if not text.strip():
            return default
        try:
            return json.loads(text)
        except ValueError as error:
            self.problems.append(f"{label} is not valid JSON (truncated? {error})")
            return default

    def subtask_load_imbalance(self) -> float | None:
        """LI over subtasks that report a cost, or the parser's own value."""
        if self.load_imbalance is not None:
            return self.load_imbalance
        costs = [c for c in (s.cost() for s in self.subtasks) if c is not None]
        return tier1.load_imbalance(costs) if costs else None

    def metrics(self) -> dict[str, float]:
        """Tier-1 metrics this source supports (throughput, allocation ratio per unit kind and
        the first kind's, load imbalance; MLflow names), plus the vendor figures in ``extra``."""
        out: dict[str, float] = {}
        if self.samples_per_s is not None:
            out["throughput.samples_per_s"] = float(self.samples_per_s)
        if self.units:
            out.update(tier1.allocation_metrics(self.units))
        li = self.subtask_load_imbalance()
        if li is not None:
            out.update({"tier1.load_imbalance": li, "tier1.subtasks": float(len(self.subtasks))})
        out.update({f"memory.peak_bytes.{level}": float(used) for level, used in self.memory_bytes.items()})
        out.update({k: float(v) for k, v in self.extra.items()})
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``python -m dabench ingest`` prints."""
        optional = ("time_s", "rate", "cycles", "group", "utilization")
        subtasks = [
            {"name": s.name, **{k: getattr(s, k) for k in optional if getattr(s, k) is not None}, "units": s.units}
            for s in self.subtasks
        ]
        bases = ("throughput_basis", "load_imbalance_basis")  # when set
        shown = ("problems", "skipped", "phases_s", "info", "details", "notes")  # when not empty
        return {
            "status": self.status,
            "source": self.source,
            "files": self.files,
            "subtask_kind": self.subtask_kind,
            "units": {k: asdict(u) for k, u in self.units.items()},
            "subtasks": subtasks,
            "bottleneck": self.bottleneck,
            "metrics": self.metrics(),
            **{k: getattr(self, k) for k in bases if getattr(self, k)},
            "config": self.stated.to_dict(),
            **{k: getattr(self, k) for k in shown if getattr(self, k)},
        }

    def to_profile(
        self,
        samples_per_step: int | None = None,
        tokens_per_step: int | None = None,
        step_times_s: list[float] | None = None,
    ) -> Profile:
        """A measured Profile: step times from the arguments or the artifact (required). Subtask
        costs become ``time_s`` only when they are seconds (``rate`` stays a rate); a cycle-only
        LI (clock unknown) is carried in ``extra_metrics`` as ``tier1.load_imbalance``."""
        steps = list(step_times_s if step_times_s is not None else self.step_times_s)
        per_step = samples_per_step if samples_per_step is not None else self.samples_per_step
        if not steps or not per_step:
            raise ValueError(f"{self.source}: no step times / samples per step to build a measured Profile from")
        subtasks = [
            Subtask(s.name, time_s=s.time_s, rate=s.rate if s.time_s is None else None, units=dict(s.units))
            for s in self.subtasks
        ]
        extra = dict(self.extra)
        has_seconds_or_rates = any(s.time_s is not None or s.rate for s in subtasks)
        li = self.subtask_load_imbalance()
        if li is not None and (self.load_imbalance is not None or not has_seconds_or_rates):
            extra["tier1.load_imbalance"] = li  # compute_metrics applies extra_metrics last
        return Profile(
            mode="measure",
            source=self.source,
            step_times_s=steps,
            samples_per_step=int(per_step),
            tokens_per_step=int(tokens_per_step if tokens_per_step is not None else 0),
            chips=self.chips,
            units=dict(self.units),
            subtasks=subtasks,
            memory_bytes=dict(self.memory_bytes),
            bottleneck=self.bottleneck,
            extra_metrics=extra,
            tags={"subtask_kind": self.subtask_kind, "artifact_format": self.source},
            artifacts=list(self.files),
        )
