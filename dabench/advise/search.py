"""Search one platform's deployment space on predictions: seeded Optuna TPE (failures seen as
infeasible) over in-process predictions (:mod:`dabench.predictor`), no Hydra job or MLflow run per
deployment. Each proposal is an :class:`Evaluation`: feasible with its metrics, or the model's
status and reason (capacity, unsupported, invalid config, over ``max_chips``).
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from dabench.advise.space import PlatformSpace, precision_section
from dabench.core.status import DabenchError
from dabench.predictor import predict
from dabench.tune.sampling import make_sampler

log = logging.getLogger(__name__)


@dataclass
class Evaluation:
    platform: str
    precision: str
    values: dict[str, Any]
    status: str
    reason: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    chips: float = math.nan

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def tokens_per_s(self) -> float:
        return self.metrics.get("throughput.tokens_per_s", math.nan)


def _freeze(values: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items()))


def _set(config: dict, key: str, value: Any) -> None:
    node = config
    *parents, leaf = key.lstrip("+").split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = copy.deepcopy(value)


class Evaluator:
    """Evaluates deployments of one platform for one model through the one predictor. ``base`` is
    the composed config (a dict) of the platform's groups; ``cache`` keeps every evaluation."""

    def __init__(self, space: PlatformSpace, base: dict, max_chips: int):
        self.space, self.base, self.max_chips = space, base, max_chips
        self.cache: dict[tuple, Evaluation] = {}  #: every deployment evaluated, by (precision, values)

    def config(self, precision: str, values: Mapping[str, Any]) -> dict:
        config = copy.deepcopy(self.base)
        config["precision"] = precision_section(precision)
        for key, value in {**self.space.fixed, **values}.items():
            _set(config, key, value)
        return config

    def __call__(self, precision: str, values: Mapping[str, Any]) -> Evaluation:
        key = (precision, _freeze(values))
        if key in self.cache:
            return self.cache[key]

        out = self.cache[key] = Evaluation(self.space.platform, precision, dict(values), "ok")
        try:
            prediction = predict(self.config(precision, values))
        except DabenchError as error:
            out.status, out.reason = error.status.value, error.reason
        except Exception as error:  # a model bug on one deployment must not end the advice
            out.status, out.reason = "crashed", f"{type(error).__name__}: {error}"
        else:
            out.metrics = metrics = prediction.metrics
            # physical chips: the model's own count where it has one (rdu.chips: instances share an RDU)
            out.chips = float(metrics.get(f"{prediction.rc.hardware.arch}.chips", metrics.get("chips", 1.0)))
            if out.chips > self.max_chips:
                out.status, out.reason = "over_budget", f"uses {out.chips:g} chips > max_chips={self.max_chips}"
        return out


# ----------------------------------------------------------------------------- objectives


def score(
    evaluation: Evaluation, objective: str, watts_per_chip: float | None, price_per_chip_s: float | None
) -> float | None:
    """Higher is better: tokens/s (time), tokens per joule (energy), tokens per unit of money
    (cost). None when infeasible or when the objective cannot be priced."""
    tps = evaluation.tokens_per_s
    if not evaluation.ok or not (tps > 0):
        return None
    if objective == "time":
        return tps
    per_chip_s = {"energy": watts_per_chip, "cost": price_per_chip_s}[objective]  # joules or money per chip-second
    return None if per_chip_s is None else tps / (per_chip_s * evaluation.chips)


#: share of the trials for TPE alone; after it, whenever the queue is empty, the one-parameter
#: neighbours of the best deployment not yet polished are queued (the sampler fills parameters a
#: changed branch needs): an optimum one or two categorical steps from TPE's incumbents is reached
EXPLORE_SHARE = 0.6


def _enqueue_neighbours(study, params: Mapping[str, Any]) -> None:
    """Queue every deployment that differs from ``params`` in one categorical parameter."""
    from optuna.distributions import CategoricalDistribution

    seen = {name: dist for trial in study.get_trials(deepcopy=False) for name, dist in trial.distributions.items()}
    for name, value in params.items():
        dist = seen.get(name)
        for choice in dist.choices if isinstance(dist, CategoricalDistribution) else ():
            if choice != value:
                study.enqueue_trial({**params, name: choice}, skip_if_exists=True)


def search(
    space: PlatformSpace,
    predict: Evaluator,
    objective: str = "time",
    n_trials: int = 120,
    seed: int = 0,
    watts_per_chip: float | None = None,
    price_per_chip_s: float | None = None,
) -> Evaluation | None:
    """The best of ``n_trials`` Optuna asks over ``space`` (repeats answered from the cache),
    seeded TPE wrapped so that failed trials count as infeasible (dabench/tune/sampling.py)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = make_sampler("tpe", seed, {"n_startup_trials": min(20, max(5, n_trials // 5))})
    study = optuna.create_study(direction="maximize", sampler=sampler)
    explore = max(1, int(n_trials * EXPLORE_SHARE))
    polished: set[tuple] = set()  #: deployments whose neighbourhood is already queued
    scored: list[tuple[float, dict, Evaluation]] = []  #: (score, params, evaluation) of every feasible trial
    for i in range(n_trials):
        if i >= explore and not study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)):
            # the queue is empty: polish the best deployment not polished yet (the incumbent first,
            # then the runners-up: an optimum two changes away from the incumbent is one from them)
            for _, params, _ in sorted(scored, key=lambda item: -item[0]):
                if _freeze(params) not in polished:
                    polished.add(_freeze(params))
                    _enqueue_neighbours(study, params)
                    break
        trial = study.ask()
        precision, values = space.suggest(trial)
        ev = predict(precision, values)
        value = score(ev, objective, watts_per_chip, price_per_chip_s)
        if value is None:
            trial.set_user_attr("dabench.status", ev.status)
            trial.set_user_attr("dabench.reason", ev.reason[:500])
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            continue
        study.tell(trial, math.log(value))
        scored.append((value, dict(trial.params), ev))
    return max(scored, key=lambda item: item[0])[2] if scored else None  # the first of equal scores
