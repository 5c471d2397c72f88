"""Calibration points: :class:`Point`, from points.csv (one row per published number, with its
source: ``document`` and ``locator``, both required) or from a measured MLflow run (:mod:`.runs`).

Columns and sources: docs/perfmodel.md, "Knobs, sources and calibration".
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

POINTS_CSV = Path(__file__).with_name("points.csv")
_ROW = re.compile(r"\brow\b", re.IGNORECASE)
USES = ("fit", "check", "excluded")
#: points.csv columns that are not text, and how a cell becomes the Point's field
_CONVERT = {
    "overrides": lambda v: tuple(v.split()),
    "batch": int,
    "grad_accum": lambda v: int(v or 1),
    "published": float,
    "tolerance": float,
    "document": str.strip,
    "locator": str.strip,
}
_TEXT = ("id", "platform", "model", "precision", "mode", "layout", "metric", "type", "tolerance_unit", "use")


@dataclass(eq=False)
class Point:
    """One calibration point: a number measured on one config, and its source: a document and a
    locator (a points.csv row), or the MLflow run it was measured in (``run_id``, :mod:`.runs`)."""

    id: str  #: the row's id, or the run id
    platform: str
    # a points.csv row (in its columns' order): its config as conf/ groups and overrides
    model: str = ""
    overrides: tuple[str, ...] = ()
    batch: int = 1
    grad_accum: int = 1
    precision: str = ""
    mode: str = ""
    layout: str = ""
    metric: str = "samples_per_s"  #: what is compared (:mod:`.evaluate`); a run: samples_per_s
    published: float = math.nan  #: the published or measured value
    type: str = "M"  #: M measured, V vendor-stated, D derived
    tolerance: float = 0.25
    tolerance_unit: str = "rel"  #: rel or points
    use: str = "fit"  #: fit, check or excluded
    source: str = ""  #: free text: the row's citation; a run: "dabench" or "ingest:<format>"
    note: str = ""
    document: str = ""
    locator: str = ""
    run_id: str = ""
    # a measured run: the machine, its config mapping and what else it recorded
    host_key: str = ""
    config: dict[str, Any] | None = None  #: the run's config mapping (None: not recorded)
    key: str = ""  #: the config's identity (repeats of one config share it)
    step_s: float = math.nan
    step_p10: float = math.nan
    step_p90: float = math.nan
    class_times: dict[str, float] = field(default_factory=dict)
    native: bool = True  #: the precision ran natively (False: emulated on this CPU)
    ceilings: tuple[float, float, str] | None = None  #: (peak FLOP/s, bandwidth B/s, memory level) it ran against
    describe: str = ""
    no_config: str = ""  #: why no config was recorded: what a prediction would need
    rc: Any = None  #: a run's built RunConfig and Ceilings (:func:`.evaluate.prepare`)
    roof: Any = None

    @property
    def source_key(self) -> str:
        """The source this point is left out with: ``document | locator`` without its row, or its run."""
        if self.run_id:
            return f"MLflow run {self.run_id}"
        return f"{self.document} | {_ROW.split(self.locator, maxsplit=1)[0].rstrip(' ,;')}"

    def error(self, predicted: float) -> float:
        """Signed error: (predicted - published) / published for ``rel``, predicted - published for ``points``."""
        if self.tolerance_unit == "points":
            return predicted - self.published
        return (predicted - self.published) / self.published


@lru_cache(maxsize=1)
def load_points(path: Path = POINTS_CSV) -> tuple[Point, ...]:
    with path.open(newline="") as handle:
        rows = [
            Point(
                **{c: row[c] for c in (*_TEXT, "source", "note")},
                **{c: f(row.get(c) or "") for c, f in _CONVERT.items()},
            )
            for row in csv.DictReader(line for line in handle if not line.startswith("#"))
        ]
    ids = [p.id for p in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate point ids in {path.name}")
    for p in rows:
        if p.use not in USES or p.tolerance_unit not in ("rel", "points") or p.type not in ("M", "V", "D"):
            raise ValueError(f"{path.name} row {p.id}: bad use/tolerance_unit/type")
        if len(p.document) < 8 or not p.locator:
            raise ValueError(f"{path.name} row {p.id}: needs a document and a locator (its source)")
    return tuple(rows)


def uncertain_tolerance(point: Point) -> str:
    """ "" when ``point``'s tolerance is the standard one (throughput 25%, allocation 5 points);
    else the reason its note states as ``uncertain: <reason>`` (or "NO STATED REASON")."""
    if point.metric.endswith("_per_s"):
        standard = point.tolerance_unit == "rel" and point.tolerance <= 0.25
    elif point.metric == "allocation_pct":
        standard = point.tolerance_unit == "points" and point.tolerance <= 5
    else:
        return ""
    if standard:
        return ""
    match = re.search(r"uncertain:\s*([^;]{20,})", point.note)
    return match.group(1).strip() if match else "NO STATED REASON"


def group_by(points: Iterable[Point], key: Callable[[Point], Any]) -> dict[Any, list[Point]]:
    """``points`` by ``key(point)``: the keys in the order first seen, each group in ``points``' order."""
    groups: dict[Any, list[Point]] = {}
    for p in points:
        groups.setdefault(key(p), []).append(p)
    return groups


@dataclass
class LeftOut:
    """A run that is no point (or cannot be predicted), with the reason."""

    run_id: str
    reason: str
