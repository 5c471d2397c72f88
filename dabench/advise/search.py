"""Search one platform's deployment space on predictions: every layout scored, the best ones
climbed one plain value at a time (:func:`search`, deterministic), over in-process predictions
(:mod:`dabench.predictor`), no Hydra job or MLflow run per deployment. Each deployment is an
:class:`Evaluation`: feasible with its metrics, or the model's status and reason (capacity,
unsupported, invalid config, over ``max_chips``).
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from dabench.advise.space import PlatformSpace, precision_section
from dabench.core.status import DabenchError
from dabench.predictor import predict

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


def _inner(space: PlatformSpace) -> list[tuple[str, dict[str, Any]]]:
    """Every combination of the plain dimensions (precision and ``dims``), the layouts' partner."""
    return [
        (precision, dict(zip((d.key for d in space.dims), combo, strict=True)))
        for precision in space.precisions
        for combo in itertools.product(*(d.values for d in space.dims))
    ]


def search(
    space: PlatformSpace,
    predict: Evaluator,
    objective: str = "time",
    depth: int = 100,
    watts_per_chip: float | None = None,
    price_per_chip_s: float | None = None,
) -> Evaluation | None:
    """The best deployment of ``space``: every layout (``space.structured``'s grid) is scored at the
    incumbent's plain values (precision and ``dims``; on failure, the best of their one-value
    changes); the ``depth`` best layouts are climbed to a local optimum one plain value at a time;
    repeated until the incumbent's plain values stand (benchmarks/advise_quality.py measures the
    gap to the exhaustive best)."""
    layouts = list(space.structured.grid()) if space.structured is not None else [{}]
    inner = _inner(space)
    keys = ["precision", *(d.key for d in space.dims)]
    options = [space.precisions, *(d.values for d in space.dims)]

    def value(plain: tuple, layout: dict) -> float:
        ev = predict(plain[0], {**dict(zip(keys[1:], plain[1:], strict=True)), **layout})
        found = score(ev, objective, watts_per_chip, price_per_chip_s)
        return -math.inf if found is None else found

    def neighbours(plain: tuple) -> list[tuple]:
        return [plain[:i] + (v,) + plain[i + 1 :] for i, vs in enumerate(options) for v in vs if v != plain[i]]

    def climb(plain: tuple, layout: dict) -> tuple[float, tuple]:
        best = (value(plain, layout), plain)
        while True:
            step = max(((value(n, layout), n) for n in neighbours(best[1])), key=lambda item: item[0], default=best)
            if step[0] <= best[0]:
                return best
            best = step

    start = (inner[len(inner) // 2][0], *inner[len(inner) // 2][1].values())
    seen: set[tuple] = set()
    while start not in seen:
        seen.add(start)
        probes = []
        for i, layout in enumerate(layouts):
            found = value(start, layout)
            if found == -math.inf:
                found = max(value(n, layout) for n in neighbours(start)) if neighbours(start) else found
            probes.append((found, i))
        ranked = sorted(probes, key=lambda item: -item[0])[:depth]
        climbs = [(*climb(start, layouts[i]), i) for found, i in ranked if found > -math.inf]
        if not climbs:
            break
        start = max(climbs, key=lambda item: item[0])[1]
    feasible = [(s, e) for e in predict.cache.values() if (s := score(e, objective, watts_per_chip, price_per_chip_s))]
    return max(feasible, key=lambda item: item[0])[1] if feasible else None
