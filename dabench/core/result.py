"""The result of one run: what the pipeline returns, the tracker records and the API hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dabench.core.status import Status, is_ok

if TYPE_CHECKING:
    from dabench.core.ceilings import Ceilings
    from dabench.core.profile import Profile


@dataclass
class RunResult:
    status: Status
    reason: str
    mode: str  #: measure, predict or validate (what was actually done)
    metrics: dict[str, float] = field(default_factory=dict)
    profile: Profile | None = None
    predicted: Profile | None = None
    graph: Any = None  #: the run's OpGraph (workload/opgraph.py; core sits below workload)
    ceilings: Ceilings | None = None
    diagnosis: tuple[str, str] | None = None
    notes: dict[str, str] = field(default_factory=dict)
    #: the RunConfig that ran (config/sections.py; core sits below config), None when refused
    run_config: Any = None
    #: the resolved, placement-applied config mapping (what is logged as params)
    config: dict | None = None

    @property
    def ok(self) -> bool:
        return is_ok(self.status)

    @property
    def objective(self) -> float:
        """Samples/s for an ok run, NaN otherwise (the sweeper records NaN as a failed trial)."""
        if is_ok(self.status):
            return float(self.metrics["throughput.samples_per_s"])
        return float("nan")
