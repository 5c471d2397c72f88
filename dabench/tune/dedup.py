"""A study evaluates each deployment once: identity, what the study holds, and re-drawing.

- A deployment is its full override set after the structured hook (:func:`deployment_key`):
  two Optuna parameter sets that give the same overrides are the same deployment.
- The study *holds* a deployment when a trial with it is COMPLETE, FAILED with a status that
  counts (the run was refused: capacity, oom, ...) or RUNNING (here or on another worker);
  interrupted and skipped trials hold nothing (:func:`held_keys`).
- :class:`Proposer` asks Optuna for a trial whose deployment the study does not hold. A repeat
  is closed FAILED with status ``skipped`` (never launched, not counted) and the proposal is
  re-drawn: first by the study's sampler, then from the list of every deployment when the space
  can be enumerated (:func:`enumerate_deployments`), else by random sampling. It returns None
  when the space is exhausted (every deployment held) or no new one was found in
  ``MAX_PROPOSALS`` proposals.

The caller holds the study's lock (dabench.tune.locking) while it asks, so two workers never
take the same deployment.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterable, Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState

from dabench.core.status import Status
from dabench.tracking.redact import redact_overrides
from dabench.tune.study import OVERRIDES_ATTR, REASON_ATTR, STATUS_ATTR, counts_toward_budget, mark_owner

#: sampler proposals re-drawn before the space's list of deployments (or random sampling) is used
SAMPLER_REDRAWS = 3
#: proposals in one ask before the worker gives up finding a deployment the study does not hold
MAX_PROPOSALS = 50
#: spaces with more deployments than this are not enumerated (random re-draws instead)
ENUMERATION_LIMIT = 20_000

Key = tuple[str, ...]


def deployment_key(overrides: Iterable[str]) -> Key:
    """The identity of a deployment: its override strings as stored (secrets masked,
    dabench.tracking.redact), order-free."""
    return tuple(sorted(redact_overrides(overrides)))


def trial_key(trial: FrozenTrial, overrides_of: Callable[[dict[str, Any]], list[str]] | None = None) -> Key | None:
    """The deployment a trial ran or runs: its recorded overrides, else (a trial written before
    they were recorded) ``overrides_of(params)``; None when neither is known."""
    recorded = trial.user_attrs.get(OVERRIDES_ATTR)
    if isinstance(recorded, list):
        return deployment_key(recorded)
    if overrides_of is not None and trial.params:
        try:
            return deployment_key(overrides_of(dict(trial.params)))
        except Exception:  # parameters of another space: not comparable
            return None
    return None


def holds(trial: FrozenTrial) -> bool:
    """Whether the trial's deployment counts as evaluated or being evaluated."""
    return trial.state == TrialState.RUNNING or counts_toward_budget(trial)


def held_keys(
    trials: Sequence[FrozenTrial], overrides_of: Callable[[dict[str, Any]], list[str]] | None = None
) -> set[Key]:
    """The deployments ``trials`` hold (see the module docstring)."""
    keys = (trial_key(t, overrides_of) for t in trials if holds(t))
    return {k for k in keys if k is not None}


class NotEnumerable(Exception):
    """The space has a continuous dimension, or more deployments than the limit."""


class _PathTrial:
    """A stand-in for ``optuna.Trial`` whose i-th suggest call returns option ``path[i]``;
    records how many options each call had (the enumeration's odometer)."""

    def __init__(self, path: list[int]):
        self.path, self.widths, self.params = list(path), [], {}

    def _pick(self, name: str, options: list[Any]) -> Any:
        if not options:
            raise NotEnumerable(f"{name}: no options")
        index = len(self.widths)
        self.widths.append(len(options))
        if index >= len(self.path):
            self.path.append(0)
        self.params[name] = options[self.path[index]]
        return self.params[name]

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any:
        return self._pick(name, list(choices))

    def suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int:
        return self._pick(name, list(range(low, high + 1, 1 if log else step)))

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> float:
        if step is None:
            raise NotEnumerable(f"{name}: a continuous dimension")
        return self._pick(name, [low + i * step for i in range(int(round((high - low) / step)) + 1)])


def _next_path(path: list[int], widths: list[int]) -> list[int] | None:
    """The odometer's next reading after ``path`` (None after the last)."""
    path = path[: len(widths)]
    for level in range(len(path) - 1, -1, -1):
        if path[level] + 1 < widths[level]:
            return path[:level] + [path[level] + 1]
    return None


def enumerate_deployments(
    suggest: Callable[[Any], dict[str, Any]],
    overrides_of: Callable[[dict[str, Any]], list[str]],
    limit: int = ENUMERATION_LIMIT,
) -> dict[Key, dict[str, Any]]:
    """Every deployment of the space {key: Optuna parameters that give it}, found by walking
    each suggest call's options; NotEnumerable for a continuous space, one with more than
    ``limit`` parameter sets, or a hook that needs more than suggest calls."""
    found: dict[Key, dict[str, Any]] = {}
    path: list[int] | None = []
    for _ in range(limit + 1):
        if path is None:
            return found
        trial = _PathTrial(path)
        try:
            values = suggest(trial)
        except NotEnumerable:
            raise
        except Exception as error:
            raise NotEnumerable(
                f"the space's suggest() needs a real trial ({type(error).__name__}: {error})"
            ) from error
        found.setdefault(deployment_key(overrides_of(values)), dict(trial.params))
        path = _next_path(trial.path, trial.widths)
    raise NotEnumerable(f"more than {limit} parameter sets")


class Proposer:
    """Asks trials whose deployment the study does not hold (see the module docstring).

    ``suggest(trial) -> values`` and ``overrides_of(values) -> [override]`` describe the space;
    ``held`` is the set of held keys, kept up to date by :meth:`ask`."""

    def __init__(
        self,
        study: optuna.Study,
        suggest: Callable[[Any], dict[str, Any]],
        overrides_of: Callable[[dict[str, Any]], list[str]],
        rng: random.Random | None = None,
    ):
        self.study, self.suggest, self.overrides_of = study, suggest, overrides_of
        self.rng = rng or random.Random()
        self._catalog: dict[Key, dict[str, Any]] | None = None
        self._enumerable: bool | None = None
        self.skipped = 0

    def catalog(self) -> dict[Key, dict[str, Any]] | None:
        """Every deployment of the space, or None when it cannot be enumerated (computed once)."""
        if self._enumerable is None:
            try:
                self._catalog = enumerate_deployments(self.suggest, self.overrides_of)
                self._enumerable = True
            except NotEnumerable:
                self._enumerable = False
        return self._catalog

    def exhausted(self, held: set[Key]) -> bool:
        """True when the space is finite and every deployment of it is held."""
        catalog = self.catalog()
        return catalog is not None and not (catalog.keys() - held)

    def ask(self, held: set[Key]) -> tuple[optuna.Trial, list[str]] | None:
        """A new trial (owner recorded, overrides recorded in ``dabench.overrides`` with secrets
        masked) and its overrides as launched, its key added to ``held``; None when no deployment is left to propose."""
        if self._enumerable and self.exhausted(held):
            return None
        for attempt in range(MAX_PROPOSALS):
            if attempt and self.exhausted(held):
                return None
            if attempt >= SAMPLER_REDRAWS:
                self._steer(held)
            trial = self._ask_with(random_sampler=attempt >= SAMPLER_REDRAWS and self._enumerable is False)
            mark_owner(trial)
            overrides = self.overrides_of(self.suggest(trial))
            key = deployment_key(overrides)
            if key not in held:
                trial.set_user_attr(OVERRIDES_ATTR, redact_overrides(overrides))
                held.add(key)
                return trial, overrides
            self._skip(trial, overrides)
        return None

    def _steer(self, held: set[Key]) -> None:
        """Before a re-draw past the sampler's: enqueue an unheld deployment of an enumerable
        space (a space that cannot be enumerated is sampled at random instead)."""
        catalog = self.catalog() or {}
        unheld = [params for key, params in catalog.items() if key not in held]
        if unheld:
            self.study.enqueue_trial(self.rng.choice(unheld))

    def _ask_with(self, random_sampler: bool) -> optuna.Trial:
        if not random_sampler:
            return self.study.ask()
        sampler = self.study.sampler
        self.study.sampler = optuna.samplers.RandomSampler(seed=self.rng.randrange(2**31))
        try:
            return self.study.ask()
        finally:
            self.study.sampler = sampler

    def _skip(self, trial: optuna.Trial, overrides: list[str]) -> None:
        """Close a repeat: FAILED, status ``skipped`` (not counted, never launched)."""
        trial.set_user_attr(OVERRIDES_ATTR, redact_overrides(overrides))
        trial.set_user_attr(STATUS_ATTR, Status.SKIPPED.value)
        trial.set_user_attr(REASON_ATTR, "a deployment the study already evaluated or is evaluating")
        self.study.tell(trial, state=TrialState.FAIL)
        self.skipped += 1
