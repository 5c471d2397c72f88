"""Out-of-sample error of the analytical models and the honest coverage of their bands.

Every throughput point counts (an ``excluded`` one at its error); ``fit`` points are predicted by
constants refitted without them, the others by the shipped constants; a score is
``|log(predicted / published)|``; the band is split-conformal at ``NOMINAL`` coverage (``wide``
with too few scores); coverage is measured nested and pooled with its Clopper-Pearson 95%
interval. Nothing here writes a file; :mod:`.constant_set` stores the result.

Details: docs/perfmodel.md, "Out-of-sample error and bands".
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable

from dabench.perfmodel.fit.evaluate import predict_point
from dabench.perfmodel.fit.points import Point, load_points
from dabench.perfmodel.fit.sources import fitted

THROUGHPUT_METRICS = ("samples_per_s", "tokens_per_s")
NOMINAL = 0.8  #: the bands' nominal coverage
GOAL_MEDIAN, GOAL_MAX = 0.15, 0.35  #: issue 20: out-of-sample median and max |error| per platform
FEW_POINTS = 8  #: below this many throughput points a platform says its numbers rest on few points


def score(predicted: float, published: float) -> float:
    """``|log(predicted / published)|``; ``inf`` for a refused (NaN) or non-positive prediction."""
    if predicted is None or math.isnan(predicted) or predicted <= 0:
        return math.inf
    return abs(math.log(predicted / published))


def rel_error(predicted: float, published: float) -> float:
    """(predicted - published) / published; NaN when refused."""
    if predicted is None or math.isnan(predicted):
        return math.nan
    return (predicted - published) / published


def conformal_rank(n: int, nominal: float = NOMINAL) -> int:
    """1-based rank of the split-conformal quantile among ``n`` scores (may exceed ``n``)."""
    return math.ceil((n + 1) * nominal - 1e-12)


def conformal_q(scores: list[float], nominal: float = NOMINAL) -> float | None:
    """The split-conformal half-width in log space, or None when ``scores`` are too few."""
    k = conformal_rank(len(scores), nominal)
    if len(scores) == 0 or k > len(scores):
        return None
    return sorted(scores)[k - 1]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval of a proportion k / n."""
    from scipy.stats import beta

    alpha = 1 - level
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class CvRow:
    point: Point
    in_sample: float  #: predicted with the shipped constants
    out_of_sample: float  #: predicted by constants fitted without this point
    left_out: bool  #: True when a fit saw this point (so it was refitted without it)

    @property
    def error_in(self) -> float:
        return rel_error(self.in_sample, self.point.published)

    @property
    def error_out(self) -> float:
        return rel_error(self.out_of_sample, self.point.published)

    @property
    def score(self) -> float:
        return score(self.out_of_sample, self.point.published)


@dataclass
class PlatformCv:
    arch: str
    rows: list[CvRow]
    fitted_constants: list[str]  #: paths of the fitted constants
    calibration_points: int  #: every row of points.csv for the platform (all metrics)
    nested: dict[str, list[float]] = field(default_factory=dict)  #: point -> others' scores without it
    refits: int = 0

    @property
    def scores(self) -> list[float]:
        return [r.score for r in self.rows]

    def abs_errors(self, which: str) -> list[float]:
        """|error| of every throughput point (``inf`` for a refused one), in or out of sample."""
        out = []
        for r in self.rows:
            e = r.error_in if which == "in" else r.error_out
            out.append(math.inf if math.isnan(e) else abs(e))
        return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def summary(values: list[float]) -> tuple[float, float]:
    """(median, max) of |errors| (NaN, NaN when empty)."""
    return (_median(values), max(values)) if values else (math.nan, math.nan)


def throughput_points(arch: str) -> list[Point]:
    return [p for p in load_points() if p.platform == arch and p.metric in THROUGHPUT_METRICS]


def cross_validate(arch: str, nested: bool = True, log: Callable[[str], None] | None = None) -> PlatformCv:
    """Leave-one-out predictions of ``arch``'s throughput points (and, with ``nested``, every
    point's band-sizing scores without it)."""
    from dabench.perfmodel.fit.refit import refit

    entries = fitted(arch)
    fit_ids = {i for e in entries.values() for i in e.points}
    points = throughput_points(arch)
    fits: dict[frozenset, dict[str, float] | None] = {frozenset(): None}  # None: the shipped YAML

    def values(leave: frozenset) -> dict[str, float] | None:
        if leave not in fits:
            if log:
                log(f"  {arch}: refit without {', '.join(sorted(leave))}")
            fits[leave] = refit(arch, leave_out=leave).values
        return fits[leave]

    def refitted(p: Point) -> bool:
        return bool(entries) and p.id in fit_ids and p.use != "excluded"

    rows = []
    for p in points:
        inside = predict_point(p)
        outside = predict_point(p, values(frozenset({p.id}))) if refitted(p) else inside
        rows.append(CvRow(p, inside, outside, refitted(p)))
    result = PlatformCv(arch, rows, sorted(entries), sum(1 for q in load_points() if q.platform == arch))
    if nested:
        by_id = {r.point.id: r for r in rows}
        for p in points:
            if not refitted(p):  # no fit saw p: the others' out-of-sample scores never depended on it
                result.nested[p.id] = [by_id[q.id].score for q in points if q.id != p.id]
                continue
            result.nested[p.id] = [
                score(predict_point(q, values(frozenset({p.id, q.id} if refitted(q) else {p.id}))), q.published)
                for q in points
                if q.id != p.id
            ]
    result.refits = len(fits) - 1
    return result


def band_q(own: list[float], pooled: list[float], nominal: float = NOMINAL) -> tuple[str, float | None]:
    """(kind, log half-width): ``conformal`` from the platform's own scores, else ``wide`` (the
    largest finite pooled score, with its own scores), ``unbounded`` when none is finite."""
    q = conformal_q(own, nominal)
    if q is not None:
        return ("conformal", q) if math.isfinite(q) else ("unbounded", None)
    finite = [s for s in pooled + own if math.isfinite(s)]
    return ("wide", max(finite)) if finite else ("unbounded", None)


@dataclass(frozen=True)
class Coverage:
    covered: int
    n: int
    interval: tuple[float, float]
    per_point: dict[str, bool]

    @property
    def rate(self) -> float:
        return self.covered / self.n if self.n else math.nan


def nested_coverage(results: list[PlatformCv], nominal: float = NOMINAL) -> Coverage:
    """Pooled empirical coverage of the bands, each point's band sized without that point."""
    per_point = {}
    for cv in results:
        others = [s for o in results if o.arch != cv.arch for s in o.scores]
        for row in cv.rows:
            kind, q = band_q(cv.nested[row.point.id], others, nominal)
            per_point[row.point.id] = q is not None and row.score <= q
    covered = sum(per_point.values())
    return Coverage(covered, len(per_point), clopper_pearson(covered, len(per_point)), per_point)
