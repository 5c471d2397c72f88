"""One platform on one machine, fitted to its measured runs: the fit, the base and fitted sets'
predictions out of sample, the measurements' own noise floor, and drift (:func:`fit_group`,
:class:`GroupFit`, :func:`drift`). Method: docs/fitting.md, "The fit" and "Drift".
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from dabench.fit.cv import NOMINAL, out_of_group, summary
from dabench.fit.evaluate import base_options, predict_point, prepare, quiet_model
from dabench.fit.points import LeftOut, Point, group_by
from dabench.fit.refit import fittable, refit_runs
from dabench.perfmodel.constants import band as band_of
from dabench.predictor import opgraph

LOO_MAX = 40  #: configs up to which the out-of-sample score is leave-one-config-out (then 10-fold)
K_FOLD = 10


def folds(points: list[Point]) -> list[set[str]]:
    """Config keys left out together: one config each (leave one config out), or 10 folds."""
    keys = sorted({p.key for p in points})
    n = len(keys) if len(keys) <= LOO_MAX else K_FOLD
    return [set(keys[i::n]) for i in range(n)]


def noise_floor(points: list[Point]) -> tuple[float, str]:
    """(floor, how): the measurements' own spread (docs/fitting.md, "The fit", noise floor)."""
    groups = {key: [p.published for p in mine] for key, mine in group_by(points, lambda p: p.key).items()}
    spreads = [abs(x / statistics.median(v) - 1) for v in groups.values() if len(v) > 1 for x in v]
    if spreads:
        repeated = sum(1 for v in groups.values() if len(v) > 1)
        return statistics.median(spreads), f"repeats: {repeated} configs measured more than once, {len(spreads)} runs"
    within = [
        (p.step_p90 - p.step_p10) / (2 * p.step_s)
        for p in points
        if p.step_s > 0 and math.isfinite(p.step_p90) and math.isfinite(p.step_p10)
    ]
    if within:
        return statistics.median(within), f"no repeated configs: spread of the timed steps within {len(within)} runs"
    return math.nan, "no repeats and no step spread recorded"


def _abs_error(predicted: float, measured: float) -> float:
    """|predicted / measured - 1|; inf when refused (NaN) or not positive."""
    return abs(predicted / measured - 1) if predicted > 0 else math.inf


@dataclass
class GroupFit:
    """The fit of one platform on one machine."""

    arch: str
    host_key: str
    points: list[Point]  #: predictable points (the fit's)
    unusable: list[LeftOut]
    bounds: dict[str, tuple[float, float]]
    base: dict[str, Any]  #: the base set's knob values (start, and the 'before' column)
    fitted: dict[str, float]  #: knob -> fitted value on every point
    base_pred: dict[str, float]  #: run id -> predicted with the base constants
    in_sample: dict[str, float]  #: run id -> predicted with the fitted constants
    out_of_sample: dict[str, float]  #: run id -> predicted by a fit that did not see its config
    noise: float
    noise_how: str
    base_name: str = "published"

    def _errors(self, predictions: Mapping[str, float]) -> list[float]:
        return [_abs_error(predictions.get(p.run_id, math.nan), p.published) for p in self.points]

    @property
    def published_error(self) -> float:
        return summary(self._errors(self.base_pred))[0]

    @property
    def fitted_error(self) -> float:
        return summary(self._errors(self.out_of_sample))[0]

    @property
    def improved(self) -> bool:
        return bool(self.fitted) and self.fitted_error < self.published_error

    @property
    def recommendation(self) -> str:
        return "fitted" if self.improved else self.base_name

    def domain(self) -> dict[str, Any]:
        """The configs the set saw: ranges of the model's shape and run, precisions, layouts."""

        def span(get):
            values = [v for v in map(get, self.points) if isinstance(v, (int, float))]
            return [min(values), max(values)] if values else None

        return {
            "n_layers": span(lambda p: p.rc.model.n_layers),
            "hidden_size": span(lambda p: p.rc.model.hidden_size),
            "seq_len": span(lambda p: p.rc.model.seq_len),
            "batch_size": span(lambda p: p.rc.run.batch_size),
            "params": span(lambda p: opgraph(p.rc).params),
            "precisions": sorted({p.rc.precision.name for p in self.points}),
            "hardware": sorted({p.rc.hardware.name for p in self.points}),
            "strategies": sorted({p.rc.parallel.strategy for p in self.points}),
        }


@quiet_model()
def fit_group(
    arch: str, host: str, points: list[Point], base: str = "published", log: Callable[[str], None] | None = None
) -> GroupFit:
    """Fit ``arch``'s knobs to one machine's points, with in- and out-of-sample predictions."""
    usable, unusable = prepare(points)
    start = base_options(arch, base)
    bounds = fittable(arch, usable)
    fitted = refit_runs(usable, bounds, start)
    base_pred = {p.run_id: predict_point(p, start) for p in usable}
    in_sample = {p.run_id: predict_point(p, {**start, **fitted}) for p in usable}
    chunks = folds(usable)
    fold_of = {key: str(i) for i, keys in enumerate(chunks, 1) for key in keys}

    def without(fold: str) -> dict[str, Any]:
        train = [p for p in usable if fold_of[p.key] != fold]
        if log:
            log(f"  {arch} [{host}]: out-of-sample fit {fold}/{len(chunks)} without {len(usable) - len(train)} run(s)")
        return {**start, **refit_runs(train, fittable(arch, train) if len({p.key for p in train}) > 1 else {}, start)}

    # nothing fitted: the base constants, which saw none of these points
    out = out_of_group(usable, lambda p: fold_of[p.key], without) if fitted else dict(base_pred)
    floor, how = noise_floor(usable or points)
    return GroupFit(
        arch,
        host,
        usable,
        unusable,
        bounds,
        {k: start.get(k) for k in bounds},
        fitted,
        base_pred,
        in_sample,
        out,
        floor,
        how,
        base,
    )


@dataclass
class Drift:
    name: str
    arch: str
    n: int
    outside: int
    nominal: float
    p_value: float

    @property
    def drifted(self) -> bool:
        return self.n > 0 and self.p_value < 0.05 and self.outside / self.n > 1 - self.nominal


def at_least(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): the binomial tail, summed in log space (no overflow)."""
    if k <= 0 or p >= 1:
        return 1.0 if k <= n else 0.0
    if p <= 0 or k > n:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = (
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k, n + 1)
    )
    return min(1.0, sum(math.exp(t) for t in terms))


@quiet_model()
def drift(name: str, constant_set: Mapping[str, Any], points: list[Point]) -> list[Drift]:
    """Per banded platform of ``constant_set``: how many ``points`` fall outside its band and the
    binomial tail probability of that many misses (docs/fitting.md, "Drift")."""
    out = []
    for arch, entry in (constant_set.get("platforms") or {}).items():
        if not (entry.get("band") or {}).get("factor"):
            continue
        host = entry.get("host_key")
        mine, _ = prepare([p for p in points if p.platform == arch and (not host or p.host_key == host)])
        options = base_options(arch)
        if name != "published":  # the set's own fitted knobs (it may be a FILE not on the search path)
            options.update(
                {
                    k.split(".", 1)[1]: c["value"]
                    for k, c in (entry.get("constants") or {}).items()
                    if k.startswith("options.") and c.get("kind") == "fitted"
                }
            )
        values = [predict_point(p, options) for p in mine]
        bands = [band_of(arch, value, constant_set) if value > 0 else None for value in values]
        outside = sum(
            band is None or not (band[0] <= p.published <= band[1]) for band, p in zip(bands, mine, strict=True)
        )
        nominal = float(constant_set.get("nominal_coverage") or NOMINAL)
        p_value = at_least(outside, len(mine), 1 - nominal)
        out.append(Drift(name, arch, len(mine), outside, nominal, p_value))
    return out
