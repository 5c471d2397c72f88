"""Out-of-source error of the analytical models and the honest coverage of their bands.

Leaves out one whole source (points.csv document and locator) at a time, refits without it (the
``fitted`` constants and, from their priors, those read from it), and scores every point of it;
bands are checked nested. Writes nothing (:mod:`.constant_set` does).
Method: docs/perfmodel.md, "Out-of-sample error and bands".
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from dabench.config.build import build_run_config
from dabench.fit.evaluate import point_config, predict_point
from dabench.fit.points import Point, group_by, load_points
from dabench.fit.refit import refit
from dabench.fit.sources import fitted, load_sources, read_from_calibration
from dabench.perfmodel import reach

THROUGHPUT_METRICS = ("samples_per_s", "tokens_per_s")
#: each metric's own error measure (see the module docstring)
MEASURES = {
    "samples_per_s": "|log ratio|",
    "tokens_per_s": "|log ratio|",
    "allocation_pct": "|points|",
    "mixed_gain_pct": "|points|",
    "scaling_keep_pct": "|points|",
    "feasible": "wrong",
}
NOMINAL = 0.8  #: the bands' default nominal coverage (run param ``band.nominal``)
GOAL_MEDIAN, GOAL_MAX = 0.15, 0.35  #: out-of-sample median and max |error| per platform
FEW_POINTS = 8  #: below this many throughput points a platform says its numbers rest on few points
MIN_PLATFORM_POINTS = 10  #: platforms with at least this many banded points count for the lowest coverage
AT_BOUND = 0.02  #: a fitted constant this share of its prior's range (or less) from a bound sits at it


def score(predicted: float, published: float) -> float:
    """``|log(predicted / published)|``; ``inf`` for a refused (NaN) or non-positive prediction."""
    if predicted is None or math.isnan(predicted) or predicted <= 0:
        return math.inf
    return abs(math.log(predicted / published))


def measure(point: Point, predicted: float) -> float:
    """``point``'s error under its metric's own measure (:data:`MEASURES`); inf when refused."""
    if point.metric in THROUGHPUT_METRICS:
        return score(predicted, point.published)
    if predicted is None or math.isnan(predicted):
        return math.inf
    if point.metric == "feasible":
        return float(predicted != point.published)
    return abs(predicted - point.published)


@dataclass(frozen=True)
class BoundDistance:
    """Where a fitted constant sits in its prior: its distance from each bound as a share of the
    range, on a log scale where the range spans more than a decade (negative: outside it)."""

    path: str
    value: float
    bounds: tuple[float, float]
    log: bool
    low: float
    high: float

    @property
    def at_bound(self) -> bool:
        return min(self.low, self.high) <= AT_BOUND


def bound_distance(path: str, value: float, bounds: tuple[float, float]) -> BoundDistance:
    """``value``'s :class:`BoundDistance` within ``bounds`` (low < high)."""
    lo, hi = bounds
    log = lo > 0 and hi > 10 * lo
    if log and value <= 0:
        return BoundDistance(path, value, (lo, hi), log, -math.inf, math.inf)
    at = math.log10 if log else float
    span = at(hi) - at(lo)
    return BoundDistance(path, value, (lo, hi), log, (at(value) - at(lo)) / span, (at(hi) - at(value)) / span)


def bound_distances(constants: Mapping[str, Mapping[str, Any]]) -> list[BoundDistance]:
    """The :class:`BoundDistance` of every fitted constant with bounds in a constant set's
    ``constants`` records (path -> {value, kind, bounds})."""
    return [
        bound_distance(path, float(c["value"]), tuple(c["bounds"]))
        for path, c in constants.items()
        if c.get("kind") == "fitted" and c.get("bounds") and c.get("value") is not None
    ]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval of a proportion k / n ((0, 1) when n is 0)."""
    from scipy.stats import beta

    alpha = 1 - level
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


@dataclass
class CvRow:
    point: Point
    in_sample: float  #: predicted with the shipped constants
    out_of_sample: float  #: predicted by constants that never saw this point's source
    left_out: bool  #: True when a fit saw this point's source (so it was refitted without it)
    coords: dict | None = None  #: throughput points: reach coordinates (:func:`reach.coords`)
    band: float | None = None  #: nested band's log half-width (throughput points)

    @property
    def score(self) -> float:
        return measure(self.point, self.out_of_sample)

    @property
    def covered(self) -> bool | None:
        return None if self.band is None else self.score <= self.band


@dataclass
class PlatformCv:
    arch: str
    rows: list[CvRow]  #: every calibration point of the platform, all metrics
    sources: dict[str, list[str]] = field(default_factory=dict)  #: source -> point ids
    freed: dict[str, list[str]] = field(default_factory=dict)  #: source -> paths refitted from their prior without it

    @property
    def banded(self) -> list[CvRow]:
        return [r for r in self.rows if r.point.metric in THROUGHPUT_METRICS]

    def abs_errors(self, which: str) -> list[float]:
        """|relative error| of every throughput point (``inf`` when refused), in or out of sample."""
        return [_abs_error(r.in_sample if which == "in" else r.out_of_sample, r.point.published) for r in self.banded]


def _abs_error(predicted: float | None, published: float) -> float:
    return math.inf if predicted is None or math.isnan(predicted) else abs((predicted - published) / published)


def summary(values: list[float]) -> tuple[float, float]:
    """(median, max) of |errors| (NaN, NaN when empty)."""
    return (statistics.median(values), max(values)) if values else (math.nan, math.nan)


def out_of_group(
    points: list[Point], group_of: Callable[[Point], str], fit: Callable[[str], Mapping[str, Any] | None]
) -> dict[str, float]:
    """The cross-validation every fit uses: point id -> its value predicted with the knobs
    ``fit(group)`` returns, fitted without any point of its group (one fit per group; None: the
    start's knobs, which saw none of the group)."""
    out = {}
    for group, members in group_by(points, group_of).items():
        options = fit(group)
        out.update({p.id: predict_point(p, options) for p in members})
    return out


def cross_validate(arch: str, log: Callable[[str], None] | None = None) -> PlatformCv:
    """Leave-one-source-out predictions of every calibration point of ``arch``."""
    fit_ids = {i for e in fitted(arch).values() for i in e.points}
    points = [p for p in load_points() if p.platform == arch]
    sources = group_by(points, lambda p: p.source_key)
    provenance = load_sources(arch)
    broken = [f"{p.path}: {p.text}" for p in provenance.values() if p.kind == "invalid"]
    if broken:
        raise ValueError(f"conf/hardware/sources/{arch}.yaml: {broken[0]}")
    freed: dict[str, dict[str, tuple[float, float]]] = {}
    for path, key in read_from_calibration(arch).items():
        prior = provenance[path].prior
        if prior is not None:
            freed.setdefault(key, {})[path] = prior.bounds
    seen = {k for k, ps in sources.items() if any(p.id in fit_ids and p.use != "excluded" for p in ps)} | set(freed)

    def without(source: str) -> dict[str, float] | None:
        if source not in seen:
            return None  # the shipped constants never saw this source
        if log:
            log(f"  {arch}: refit without {source}")
        return refit(arch, leave_out={p.id for p in sources[source]}, start="middle", free=freed.get(source)).values

    out = out_of_group(points, lambda p: p.source_key, without)
    rows = [
        CvRow(
            p,
            predict_point(p),
            out[p.id],
            p.source_key in seen,
            # throughput points: the reach coordinates of their config
            reach.coords(build_run_config(point_config(p)), reach.point_release(p.layout))
            if p.metric in THROUGHPUT_METRICS
            else None,
        )
        for p in points
    ]
    return PlatformCv(
        arch,
        rows,
        {k: [p.id for p in ps] for k, ps in sources.items()},
        {key: sorted(paths) for key, paths in freed.items()},
    )


def _table(rows: list[CvRow]) -> list[dict]:
    return [{"id": r.point.id, "coords": r.coords, "score": r.score} for r in rows]


def needs(results: list[PlatformCv], nominal: float = NOMINAL) -> dict[str, float]:
    """Per throughput point: how much widening per unit of distance its band would have needed,
    sized without its source from the others' out-of-source scores. A point whose nearest other one
    lies within :data:`reach.RESOLUTION` has none: there the band is its base, whatever the growth."""
    out = {}
    for cv in results:
        for row in cv.banded:
            others = [r for r in cv.banded if r.point.source_key != row.point.source_key]
            if not others:
                continue
            _, base, _ = reach.half_width(row.coords, _table(others), wide_score(results), 0.0, nominal)
            d = min(reach.distance(row.coords, r.coords) for r in others)
            if d >= reach.RESOLUTION:
                out[row.point.id] = max(0.0, row.score - base) / d
    return out


def wide_score(results: list[PlatformCv], leave: str = "") -> float:
    """The largest finite out-of-source throughput score of any platform, less source ``leave``."""
    finite = [r.score for cv in results for r in cv.banded if r.point.source_key != leave and math.isfinite(r.score)]
    return max(finite, default=math.log(2.0))


def nested_bands(results: list[PlatformCv], nominal: float = NOMINAL) -> None:
    """Set each throughput row's band as if its source were new (sized without it)."""
    need = needs(results, nominal)
    for cv in results:
        for row in cv.banded:
            key = row.point.source_key
            rate = reach.growth(
                [
                    v
                    for cv2 in results
                    for r in cv2.banded
                    if r.point.source_key != key
                    for v in [need.get(r.point.id)]
                    if v is not None
                ],
                nominal,
            )
            table = _table([r for r in cv.banded if r.point.source_key != key])
            _, row.band, _ = reach.half_width(row.coords, table, wide_score(results, key), rate, nominal)


def band_q(own: list[float], pooled: list[float], nominal: float = NOMINAL) -> tuple[str, float | None]:
    """(kind, log half-width) of a band from scores alone (sets fitted from runs)."""
    q = reach.conformal_q(own, nominal)
    if q is not None:
        return ("conformal", q) if math.isfinite(q) else ("unbounded", None)
    finite = [s for s in pooled + own if math.isfinite(s)]
    return ("wide", max(finite)) if finite else ("unbounded", None)
