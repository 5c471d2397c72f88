"""A study evaluates each deployment once: a deployment is its override set (:func:`deployment_key`);
the study holds it while a trial with it is COMPLETE, counted FAILED or RUNNING (:func:`held_keys`);
:class:`Proposer` replaces a held proposal by a fresh deployment, None once the space is exhausted.
The caller holds the study's lock while it asks. Rules: docs/tuning.md, "What a trial is"."""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Iterable, Iterator, Sequence

import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from dabench.core.status import Status
from dabench.tracking.redact import redact_overrides
from dabench.tune.study import OVERRIDES_ATTR, REASON_ATTR, STATUS_ATTR, counts_toward_budget, mark_owner

#: in-memory random draws of the space before its deployments are enumerated
RANDOM_DRAWS = 200
#: random draws after which a space that cannot be enumerated counts as exhausted
UNENUMERABLE_DRAWS = 5_000
#: enumerated spaces up to this many parameter sets are kept in memory (larger ones are re-walked)
CATALOG_LIMIT = 50_000

Key = tuple[str, ...]
Params = dict[str, Any]


def deployment_key(overrides: Iterable[str]) -> Key:
    """The identity of a deployment: its override strings as stored (secrets masked,
    dabench.tracking.redact), order-free."""
    return tuple(sorted(redact_overrides(overrides)))


def trial_key(trial: FrozenTrial, overrides_of: Callable[[Params], list[str]] | None = None) -> Key | None:
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


def held_keys(trials: Sequence[FrozenTrial], overrides_of: Callable[[Params], list[str]] | None = None) -> set[Key]:
    """The deployments ``trials`` hold: evaluated (counted) or being evaluated (RUNNING)."""
    keys = (trial_key(t, overrides_of) for t in trials if t.state == TrialState.RUNNING or counts_toward_budget(t))
    return {k for k in keys if k is not None}


class NotEnumerable(Exception):
    """The space has a continuous dimension that no hook enumerates."""


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


class _RandomTrial:
    """A stand-in for ``optuna.Trial`` that draws each parameter uniformly (log-uniformly on a
    log scale); nothing is stored."""

    def __init__(self, rng: random.Random):
        self.rng, self.params = rng, {}

    def _keep(self, name: str, value: Any) -> Any:
        self.params[name] = value
        return value

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any:
        return self._keep(name, self.rng.choice(list(choices)))

    def suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int:
        if log:
            drawn = round(math.exp(self.rng.uniform(math.log(low), math.log(high))))
            return self._keep(name, min(high, max(low, drawn)))
        return self._keep(name, self.rng.randrange(low, high + 1, step))

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> float:
        if step is not None:
            return self._keep(name, low + step * self.rng.randrange(int(round((high - low) / step)) + 1))
        if log:
            return self._keep(name, math.exp(self.rng.uniform(math.log(low), math.log(high))))
        return self._keep(name, self.rng.uniform(low, high))


class _FixedSampler(BaseSampler):
    """Gives a trial exactly ``params`` (the fresh deployment a re-draw chose)."""

    def __init__(self, params: Params):
        self.params = params

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.params[param_name]


def _next_path(path: list[int], widths: list[int]) -> list[int] | None:
    """The odometer's next reading after ``path`` (None after the last)."""
    path = path[: len(widths)]
    for level in range(len(path) - 1, -1, -1):
        if path[level] + 1 < widths[level]:
            return path[:level] + [path[level] + 1]
    return None


def walk_params(suggest: Callable[[Any], dict[str, Any]]) -> Iterator[Params]:
    """Every Optuna parameter set ``suggest`` can make, found by walking each suggest call's
    options; NotEnumerable for a continuous dimension or a hook that needs a real trial."""
    path: list[int] | None = []
    while path is not None:
        trial = _PathTrial(path)
        try:
            suggest(trial)
        except NotEnumerable:
            raise
        except Exception as error:
            raise NotEnumerable(
                f"the space's suggest() needs a real trial ({type(error).__name__}: {error})"
            ) from error
        yield dict(trial.params)
        path = _next_path(trial.path, trial.widths)


class Proposer:
    """Asks trials whose deployment the study does not hold (see the module docstring)."""

    def __init__(self, study: optuna.Study, space: Any, rng: random.Random | None = None):
        self.study, self.space = study, space
        self.rng = rng or random.Random()
        self._catalog: list[tuple[Key, Params]] | None = None
        self.enumerable: bool | None = None

    def key_of(self, values: dict[str, Any]) -> Key:
        return deployment_key(self.space.overrides(values))

    def _deployments(self) -> Iterator[tuple[Key, Params]]:
        """(key, parameters) of every parameter set of the space; NotEnumerable when it has none."""
        if self._catalog is not None:
            yield from self._catalog
            return
        kept: list[tuple[Key, Params]] | None = []
        for params in self.space.each_params():
            item = (self.key_of(self.space.suggest(optuna.trial.FixedTrial(params))), params)
            if kept is not None:
                kept.append(item)
                if len(kept) > CATALOG_LIMIT:
                    kept = None
            yield item
        self._catalog = kept

    def size(self) -> int:
        """How many deployments the space has (NotEnumerable when it cannot be enumerated)."""
        return len({key for key, _ in self._deployments()})

    def _unheld(self, held: set[Key]) -> Params | None:
        """Parameters of a deployment not held, chosen uniformly among all of them; None when
        there is none; NotEnumerable when the space cannot be enumerated."""
        chosen, seen = None, 0
        for key, params in self._deployments():
            if key not in held:
                seen += 1
                if self.rng.randrange(seen) == 0:  # reservoir: uniform over the unheld keys
                    chosen = params
        return chosen

    def _draw(self, held: set[Key], tries: int) -> Params | None:
        for _ in range(tries):
            probe = _RandomTrial(self.rng)
            if self.key_of(self.space.suggest(probe)) not in held:
                return probe.params
        return None

    def fresh(self, held: set[Key]) -> Params | None:
        """Parameters of a deployment the study does not hold: random draws, else one picked
        uniformly among the enumerated deployments not held."""
        found = self._draw(held, RANDOM_DRAWS if self.enumerable is not False else UNENUMERABLE_DRAWS)
        if found is not None or self.enumerable is False:
            return found
        try:
            found = self._unheld(held)
            self.enumerable = True
            return found
        except NotEnumerable:
            self.enumerable = False
        return self._draw(held, UNENUMERABLE_DRAWS - RANDOM_DRAWS)

    def ask(self, held: set[Key]) -> tuple[optuna.Trial, list[str]] | None:
        """A new trial (owner recorded, overrides recorded in ``dabench.overrides`` with secrets
        masked) and its overrides as launched, its key added to ``held``; None when the space
        has no deployment left that the study does not hold."""
        if self._catalog is not None and all(key in held for key, _ in self._catalog):  # walked, all held
            return None
        trial, overrides = self._ask_with(None)
        while (key := deployment_key(overrides)) in held:  # a repeat: FAILED, skipped (not counted, never launched)
            trial.set_user_attr(OVERRIDES_ATTR, redact_overrides(overrides))
            trial.set_user_attr(STATUS_ATTR, Status.SKIPPED.value)
            trial.set_user_attr(REASON_ATTR, "a deployment the study already evaluated or is evaluating")
            self.study.tell(trial, state=TrialState.FAIL)
            params = self.fresh(held)
            if params is None:
                return None
            trial, overrides = self._ask_with(params)
        trial.set_user_attr(OVERRIDES_ATTR, redact_overrides(overrides))
        held.add(key)
        return trial, overrides

    def _ask_with(self, params: Params | None) -> tuple[optuna.Trial, list[str]]:
        """A trial sampled by the study's sampler, or given exactly ``params``, and its overrides."""
        sampler = self.study.sampler
        if params is not None:
            self.study.sampler = _FixedSampler(params)
        try:
            trial = self.study.ask()
            mark_owner(trial)
            return trial, self.space.overrides(self.space.suggest(trial))
        finally:
            self.study.sampler = sampler
