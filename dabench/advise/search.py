"""Search one platform's deployment space on predictions: every layout scored, the best ones
at every plain combination (:func:`search`, deterministic), over in-process predictions
(:mod:`dabench.predictor`), no Hydra job or MLflow run per deployment. Each deployment is an
:class:`Evaluation`: feasible with its metrics, or the model's status and reason (capacity,
unsupported, invalid config, over ``max_chips``).
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import re
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
    """Set ``key`` in ``config``, copying the mappings on its path (the others stay shared)."""
    node = config
    *parents, leaf = key.lstrip("+").split(".")
    for part in parents:
        node[part] = dict(node.get(part) or {})
        node = node[part]
    node[leaf] = copy.deepcopy(value)


class Evaluator:
    """Evaluates deployments of one platform for one model through the one predictor. ``base`` is
    the composed config (a dict) of the platform's groups; ``cache`` keeps every evaluation."""

    def __init__(self, space: PlatformSpace, base: dict, max_chips: int):
        self.space, self.base, self.max_chips = space, base, max_chips
        self.cache: dict[tuple, Evaluation] = {}  #: every deployment evaluated, by (precision, values)

    def config(self, precision: str, values: Mapping[str, Any]) -> dict:
        """The composed config of one deployment (sharing ``base``'s untouched mappings: read only)."""
        config = {**self.base, "precision": precision_section(precision)}
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


def overflow(reason: str) -> float:
    """How far a capacity failure is from fitting (needs / has; inf for any other failure)."""
    m = re.search(r"needs ([\d,\.]+) (\w+), has ([\d,\.]+) (\w+)", reason)
    if m and m.group(2) == m.group(4):
        return float(m.group(1).replace(",", "")) / max(1e-9, float(m.group(3).replace(",", "")))
    return math.inf


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


#: spaces of at most this many deployments are evaluated whole (the rdu and wse presets' are)
EXHAUSTIVE = 2000


def search(
    space: PlatformSpace,
    predict: Evaluator,
    objective: str = "time",
    depth: int = 10,
    watts_per_chip: float | None = None,
    price_per_chip_s: float | None = None,
) -> Evaluation | None:
    """The best deployment of ``space``: every layout (``space.structured``'s grid) is scored at the
    incumbent's plain values (precision and ``dims``; where that fails, for the ``10 * depth``
    failures closest to fitting, the best of their one-value changes); the ``depth`` best layouts
    are evaluated at every combination of plain values (a memory-tight best may need several
    changed at once); repeated until the incumbent's plain values stand
    (benchmarks/advise_quality.py measures the gap to the exhaustive best)."""
    if space.size() <= EXHAUSTIVE:  # small enough to evaluate whole
        layouts = []
        for precision, values in space.grid():
            predict(precision, values)
    else:
        layouts = list(space.structured.grid()) if space.structured is not None else [{}]
    keys = ["precision", *(d.key for d in space.dims)]
    options = [space.precisions, *(d.values for d in space.dims)]
    plains = list(itertools.product(*options))

    def evaluate(plain: tuple, layout: dict) -> Evaluation:
        return predict(plain[0], {**dict(zip(keys[1:], plain[1:], strict=True)), **layout})

    def value(plain: tuple, layout: dict) -> float:
        found = score(evaluate(plain, layout), objective, watts_per_chip, price_per_chip_s)
        return -math.inf if found is None else found

    def reason(plain: tuple, i: int) -> str:
        return evaluate(plain, layouts[i]).reason

    def neighbours(plain: tuple) -> list[tuple]:
        return [plain[:i] + (v,) + plain[i + 1 :] for i, vs in enumerate(options) for v in vs if v != plain[i]]

    start = tuple(values[len(values) // 2] for values in options)  # the middle of each dimension
    seen: set[tuple] = set()
    while layouts and start not in seen:
        seen.add(start)
        probes = [(value(start, layout), i) for i, layout in enumerate(layouts)]
        # the 10 x depth failures closest to fitting get the best of their one-value changes
        failed = sorted((i for found, i in probes if found == -math.inf), key=lambda i: overflow(reason(start, i)))
        for i in failed[: 10 * depth]:
            probes[i] = (max((value(n, layouts[i]) for n in neighbours(start)), default=-math.inf), i)
        ranked = sorted(probes, key=lambda item: -item[0])[:depth]
        bests = [max((value(p, layouts[i]), p) for p in plains) for found, i in ranked if found > -math.inf]
        if not bests:
            break
        start = max(bests, key=lambda item: item[0])[1]
    feasible = [(s, e) for e in predict.cache.values() if (s := score(e, objective, watts_per_chip, price_per_chip_s))]
    return max(feasible, key=lambda item: item[0])[1] if feasible else None
