"""``advise(request)``: search every asked platform, confirm each winner through the one run path
(:func:`dabench.pipeline.execute.execute`: metrics, diagnosis, the model's tags and bands), and
build the answer (:mod:`dabench.advise.answer`). No MLflow here (:mod:`dabench.advise.record`).
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from dabench.advise.search import Evaluation, Evaluator, overflow, score, search
from dabench.advise.space import PlatformSpace, build_space
from dabench.config.build import build_run_config
from dabench.config.compose import compose
from dabench.config.sections import FP8
from dabench.core.platforms import accelerators, preset
from dabench.pipeline.execute import execute

OBJECTIVES = ("time", "energy", "cost")


@dataclass
class Request:
    model: str
    tokens: float
    model_overrides: list[str] = field(default_factory=list)
    platforms: list[str] = field(default_factory=lambda: list(accelerators()))
    max_chips: int = 16
    objectives: list[str] = field(default_factory=lambda: ["time"])
    price_per_chip_hour: float | None = None
    price_per_system_hour: float | None = None
    trials: int = 10  #: best layouts searched per platform and objective (search's depth)
    seed: int = 0  #: recorded only: the search is deterministic

    def model_args(self) -> list[str]:
        return [f"model={self.model}", *self.model_overrides]


@dataclass
class PlatformOutcome:
    platform: str
    space: PlatformSpace
    trials: int  #: best layouts searched over all objectives
    evaluations: list[Evaluation]
    best: Evaluation | None
    result: Any = None  #: the winner's RunResult (execute), or None
    config: dict | None = None  #: the winner's resolved config mapping
    none_reason: str = ""  #: why no deployment fits
    statuses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Advice:
    request: Request
    outcomes: list[PlatformOutcome]
    seconds: float = 0.0

    @property
    def evaluations(self) -> int:
        return sum(len(o.evaluations) for o in self.outcomes)


def _platform_base(platform: str, groups: dict[str, str]) -> dict:
    """The composed config of ``platform`` with ``groups`` (config.compose composes each set of groups once)."""
    return compose([f"hardware={platform}", "hardware.mode=predict", *[f"{g}={c}" for g, c in groups.items()]])


def model_section(request: Request) -> dict:
    return compose(request.model_args())["model"]


def none_fits_reason(evaluations: Sequence[Evaluation], max_chips: int) -> str:
    if not evaluations:
        return "no deployment was evaluated"
    closest = min(evaluations, key=lambda e: (overflow(e.reason), -e.values.get("parallel.degree", 1)))
    summary = ", ".join(f"{n} {s}" for s, n in Counter(e.status for e in evaluations).most_common())
    return (
        f"none of {len(evaluations)} evaluated deployments fits within max_chips={max_chips} ({summary}); "
        f"closest: {closest.reason[:400]}"
    )


def evaluator(platform: str, model: dict, max_chips: int) -> Evaluator:
    """The evaluator of ``platform``'s deployment space (``.space``) for the composed ``model``:
    the space's precisions those the chip lists, fp8 among them where it lists fp8."""
    space = build_space(platform, model, max_chips)
    base = _platform_base(platform, space.groups)
    base["model"] = copy.deepcopy(model)
    listed = base["hardware"].get("precisions") or space.precisions
    space.precisions = [p for p in space.precisions if p in listed] + [FP8] * (FP8 in listed)
    return Evaluator(space, base, max_chips)


def advise_platform(request: Request, platform: str, model: dict) -> PlatformOutcome:
    started = time.perf_counter()
    predictor = evaluator(platform, model, request.max_chips)
    space, base = predictor.space, predictor.base
    figure = preset(platform).power
    price_s = None
    if request.price_per_chip_hour is not None:
        price_s = request.price_per_chip_hour / 3600.0
    elif request.price_per_system_hour is not None:
        price_s = request.price_per_system_hour / 3600.0 / int(base["hardware"].get("chips_per_node") or 1)
    for objective in request.objectives:
        usable = objective == "time" or (objective == "energy" and figure.sourced) or (objective == "cost" and price_s)
        objective = objective if usable else "time"
        search(space, predictor, objective, request.trials, figure.watts_per_chip, price_s)
    evaluations = list(predictor.cache.values())

    scored = [(score(e, request.objectives[0], figure.watts_per_chip, price_s), e) for e in evaluations]
    scored = [(s, e) for s, e in scored if s is not None]
    if not scored:  # the primary objective cannot be priced here (no power figure / price): rank by time
        scored = [(score(e, "time", None, None), e) for e in evaluations if e.ok]
    best = max(scored, key=lambda se: se[0])[1] if scored else None
    outcome = PlatformOutcome(
        platform,
        space,
        request.trials * len(request.objectives),
        evaluations,
        best,
        statuses=dict(Counter(e.status for e in evaluations)),
    )
    if best is None:
        outcome.none_reason = none_fits_reason(evaluations, request.max_chips)
    else:
        outcome.config = predictor.config(best.precision, best.values)
        outcome.result = execute(build_run_config(outcome.config))
    outcome.seconds = time.perf_counter() - started
    return outcome


def advise(request: Request, on_platform: Callable[[PlatformOutcome], None] | None = None) -> Advice:
    started = time.perf_counter()
    model = model_section(request)
    outcomes = []
    for platform in request.platforms:
        outcome = advise_platform(request, platform, model)
        outcomes.append(outcome)
        if on_platform is not None:
            on_platform(outcome)
    return Advice(request, outcomes, time.perf_counter() - started)
