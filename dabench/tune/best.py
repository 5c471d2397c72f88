"""What a study found, as data: the best deployment, trial counts, and the command line that runs
it again (or measures it on the device), secrets masked."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from dabench.core.status import Status
from dabench.tracking.redact import redact_overrides, redact_text
from dabench.tune.study import MODE_ATTR, OVERRIDES_ATTR, STATUS_ATTR

MODE_OVERRIDE = re.compile(r"^\+{0,2}hardware\.mode=")


@dataclass
class StudySummary:
    study_name: str
    direction: str
    n_trials: int
    states: dict[str, int]
    statuses: dict[str, int]
    best: FrozenTrial | None = None  #: the best completed trial
    best_overrides: list[str] = field(default_factory=list)
    best_mode: str | None = None  #: how the best trial's number was obtained: measure or predict
    sweep_overrides: list[str] = field(default_factory=list)

    def command(self, measure: bool = False) -> str | None:
        """``python -m dabench <overrides>`` for the best trial (a single run, no ``-m``).
        ``measure=True`` swaps any ``hardware.mode`` for ``hardware.mode=measure``."""
        if self.best is None:
            return None
        overrides = list(self.best_overrides)
        if measure:
            overrides = [o for o in overrides if not MODE_OVERRIDE.match(o)] + ["hardware.mode=measure"]
        found_in = [o for o in self.sweep_overrides if o.startswith("hydra.searchpath=")]  # a user's own sweep
        return "python -m dabench " + " ".join(shlex.quote(o) for o in redact_overrides([*found_in, *overrides]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "study_name": self.study_name,
            "direction": self.direction,
            "trials": self.n_trials,
            "trials_by_state": self.states,
            "trials_by_status": self.statuses,
            "best": None
            if self.best is None
            else {
                "trial": self.best.number,
                "value": self.best.value,
                "params": self.best.params,
                "mode": self.best_mode,
                "overrides": self.best_overrides,
                "command": self.command(),
                "measure_command": self.command(measure=True) if self.best_mode == "predict" else None,
            },
        }


def summarize(study: optuna.Study) -> StudySummary:
    """The study's summary: trials by Optuna state (complete, fail, ...), finished trials by run
    status (ok, capacity, oom, ...) and the best completed trial."""
    trials = study.get_trials(deepcopy=False)
    best = study.best_trial if any(t.state == TrialState.COMPLETE for t in trials) else None
    attrs = best.user_attrs if best is not None else {}
    return StudySummary(
        study_name=study.study_name,
        direction=study.direction.name.lower(),
        n_trials=len(trials),
        states=dict(Counter(trial.state.name.lower() for trial in trials)),
        statuses=dict(
            Counter(
                Status.OK.value if t.state == TrialState.COMPLETE else t.user_attrs.get(STATUS_ATTR, "unknown")
                for t in trials
                if t.state in (TrialState.COMPLETE, TrialState.FAIL)
            )
        ),
        best=best,
        best_overrides=redact_overrides(attrs.get(OVERRIDES_ATTR, [])),
        best_mode=attrs.get(MODE_ATTR),
        sweep_overrides=redact_overrides(study.user_attrs.get("dabench.command_overrides", [])),
    )


def format_summary(summary: StudySummary) -> str:
    """A few lines for the terminal, secrets masked."""
    states = ", ".join(f"{n} {s}" for s, n in sorted(summary.states.items()))
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(summary.statuses.items()))
    lines = [f"study {summary.study_name}: {summary.n_trials} trials ({states}); run statuses: {statuses or 'none'}"]
    if summary.best is None:
        lines.append("no trial completed: no best deployment yet")
    else:
        kind = {"predict": "PREDICTED", "measure": "measured", "validate": "measured"}.get(summary.best_mode or "", "")
        lines += [
            f"best: trial {summary.best.number}, {summary.best.value:,.2f} samples/s {kind}".rstrip(),
            "run it again:",
            "  " + summary.command(),
        ]
        if summary.best_mode == "predict":
            lines += [
                "measure it on the device (needs the hardware and its SDK):",
                "  " + summary.command(measure=True),
            ]
    return redact_text("\n".join(lines))
