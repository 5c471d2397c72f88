"""The ask/launch/tell loop of a deployment study, whatever launches its trials: a finite objective
is COMPLETE, anything else FAIL with the run's status and reason; an interrupted batch is marked
``interrupted`` and enqueued again. Details: docs/tuning.md, "What a trial is, and what a failed
one does" and "Storage, names, resuming".
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterator, Sequence

import optuna
from optuna.trial import TrialState

from dabench.core.status import ConfigError, Status
from dabench.runtime import faults
from dabench.runtime.sinks import fault_point
from dabench.tracking.redact import redact_text
from dabench.tune.dedup import UNENUMERABLE_DRAWS, Params, Proposer, held_keys, walk_params
from dabench.tune.outcome import JobOutcome
from dabench.tune.space import ParsedSpace, override_value
from dabench.tune.study import (
    HEARTBEAT_S,
    MODE_ATTR,
    REASON_ATTR,
    STATUS_ATTR,
    beat,
    counts_toward_budget,
    fail_interrupted,
    fail_stale_trials,
    fresh_trials,
)

log = logging.getLogger(__name__)


@dataclass
class TrialSpace:
    """The whole search space of a study: fixed overrides, grammar dimensions, a structured
    hook. ``suggest`` returns {override key: value} of one deployment."""

    parsed: ParsedSpace
    structured: Any = None  #: a structured space (dabench.tune.structured), or None

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        values = self.parsed.suggest(trial)
        if self.structured is not None:
            extra = self.structured.suggest(trial)
            clash = sorted(set(values) & set(extra))
            if clash:
                raise ConfigError(
                    "hydra.sweeper.params",
                    clash,
                    "keys set by the structured space hook cannot also be listed in params",
                )
            values.update(extra)
        return values

    def overrides(self, values: dict[str, Any]) -> list[str]:
        return [*self.parsed.fixed, *(f"{key}={override_value(value)}" for key, value in values.items())]

    def overrides_of_params(self, params: dict[str, Any]) -> list[str]:
        """The overrides of the deployment that Optuna ``params`` give (ValueError when they
        are not a point of this space)."""
        return self.overrides(self.suggest(optuna.trial.FixedTrial(params)))

    def each_params(self) -> Iterator[Params]:
        """Optuna parameters of every deployment: the suggest calls walked, or, for a hook with
        ``grid()`` and ``params_of(deployment)``, the grammar's part walked times the hook's
        grid (dabench.tune.structured); NotEnumerable for a continuous dimension."""
        params_of = getattr(self.structured, "params_of", None)
        if params_of is None or not hasattr(self.structured, "grid"):
            yield from walk_params(self.suggest)
            return
        deployments = [p for p in (params_of(d) for d in self.structured.grid()) if p is not None]
        for simple in walk_params(self.parsed.suggest):
            for params in deployments:
                yield {**simple, **params}


def tell(study: optuna.Study, trial: optuna.Trial, outcome: JobOutcome) -> TrialState:
    """Record ``outcome`` for ``trial`` (COMPLETE when its value is finite, else FAIL)."""
    fault_point("study_storage")  # tests: the study storage fails here (dabench/runtime/sinks.py)
    finite = math.isfinite(outcome)
    trial.set_user_attr(STATUS_ATTR, outcome.status if not finite else Status.OK.value)
    what_it_said = {
        REASON_ATTR: redact_text(outcome.reason)[:500],
        "dabench.job_dir": outcome.job_dir,
        MODE_ATTR: outcome.mode,
    }
    for key, text in what_it_said.items():
        if text:
            trial.set_user_attr(key, text)
    if finite:
        study.tell(trial, float(outcome))
        return TrialState.COMPLETE
    study.tell(trial, state=TrialState.FAIL)
    return TrialState.FAIL


Launch = Callable[[list[list[str]], int], Sequence[JobOutcome]]


def _end_early_line(study: optuna.Study, proposer: Proposer, done: int) -> str:
    if proposer.enumerable:
        return (
            f"study {study.study_name}: all {proposer.size()} deployments of this space evaluated; "
            f"stopping after {done} trials"
        )
    return (
        f"study {study.study_name}: no deployment it has not evaluated in {UNENUMERABLE_DRAWS} random draws "
        f"(a space that cannot be enumerated); stopping after {done} trials"
    )


def run_trials(
    study: optuna.Study,
    space: TrialSpace,
    n_trials: int,
    n_jobs: int,
    launch: Launch,
    tag_trials: bool = True,
    stop: Callable[[optuna.Study], bool] | None = None,
    lock: Callable[[], ContextManager[Any]] | None = None,
    poll_s: float = 1.0,
    extra: Sequence[str] = (),
) -> int:
    """Ask/launch/tell until the study holds ``n_trials`` counted trials, its space is exhausted,
    or ``stop(study)`` says so after a batch; returns how many trials this call ran. ``launch``
    gets each job's overrides (``extra`` last) and returns one JobOutcome per job; ``lock()``,
    the study store's lock, is held while trials are counted and created."""
    ran = 0
    proposer = Proposer(study, space)
    while not (stop is not None and stop(study)):
        batch: list[optuna.Trial] = []
        try:
            job_overrides = []
            with lock() if lock is not None else contextlib.nullcontext():
                fail_stale_trials(study, locked=lock is not None)
                trials = fresh_trials(study)  # not the per-process cache: other workers' trials too
                done = sum(counts_toward_budget(t) for t in trials)
                if done >= n_trials:
                    break
                in_flight = sum(t.state == TrialState.RUNNING for t in trials)
                held = held_keys(trials, space.overrides_of_params)
                for _ in range(min(n_jobs, n_trials - done - in_flight)):
                    asked = proposer.ask(held)
                    if asked is None:
                        break
                    trial, overrides = asked
                    batch.append(trial)
                    if tag_trials:
                        overrides = overrides + [
                            f"++tracking.tags.optuna_trial={trial.number}",
                            f"++tracking.tags.optuna_study={override_value(study.study_name)}",
                        ]
                    job_overrides.append([*overrides, *extra])
            if not batch:
                if not in_flight:  # then the budget left asked at least once: the proposer has none left
                    log.warning(_end_early_line(study, proposer, done))
                    break
                time.sleep(poll_s)  # the rest of the budget (or of the space) is in flight elsewhere
                continue
            faults.check("trial_batch")  # a test stops a worker here, its batch asked
            with _heartbeat(study, batch):
                outcomes = list(launch(job_overrides, batch[0].number))
            if len(outcomes) != len(batch):
                raise RuntimeError(f"launcher returned {len(outcomes)} results for {len(batch)} jobs")
        except BaseException as error:
            fail_interrupted(study, batch, f"{type(error).__name__} while the batch ran: {error}")
            raise
        for trial, outcome in zip(batch, outcomes, strict=False):
            state = tell(study, trial, outcome)
            ran += 1
            log.info(
                "trial %d: %s %s",
                trial.number,
                state.name.lower(),
                f"{outcome:,.2f}"
                if state == TrialState.COMPLETE
                else f"({outcome.status}: {outcome.reason.splitlines()[0] if outcome.reason else ''})",
            )
    return ran


@contextlib.contextmanager
def _heartbeat(study: optuna.Study, batch: Sequence[optuna.Trial]) -> Iterator[None]:
    """Record a heartbeat of the batch's trials every HEARTBEAT_S seconds while it runs, so that
    workers on other machines can tell a trial whose worker vanished (dabench.tune.study)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(HEARTBEAT_S):
            try:
                beat(study, batch)
            except Exception as error:  # a missed beat is retried; the trial goes on
                log.warning("could not record a heartbeat: %s", error)

    thread = threading.Thread(target=run, name="dabench-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
