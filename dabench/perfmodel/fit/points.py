"""The public calibration points (points.csv: one row per published number, with its source).

Columns: id, platform, model, overrides, batch, grad_accum, precision, mode, layout, metric,
published, type (M/V/D), tolerance, tolerance_unit (rel/points), use (check/fit/excluded), source,
note.

Details: docs/perfmodel.md, "Knobs, sources and calibration" (calibration points).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

POINTS_CSV = Path(__file__).with_name("points.csv")
USES = ("fit", "check", "excluded")


@dataclass(frozen=True)
class Point:
    id: str
    platform: str
    model: str
    overrides: tuple[str, ...]
    batch: int
    grad_accum: int
    precision: str
    mode: str
    layout: str
    metric: str
    published: float
    type: str
    tolerance: float
    tolerance_unit: str
    use: str
    source: str
    note: str

    def error(self, predicted: float) -> float:
        """Signed error: (predicted - published) / published for ``rel``, predicted - published for ``points``."""
        if self.tolerance_unit == "points":
            return predicted - self.published
        return (predicted - self.published) / self.published

    def within(self, predicted: float) -> bool:
        return abs(self.error(predicted)) <= self.tolerance


@lru_cache(maxsize=1)
def load_points(path: Path = POINTS_CSV) -> tuple[Point, ...]:
    rows = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(line for line in handle if not line.startswith("#")):
            rows.append(
                Point(
                    id=row["id"],
                    platform=row["platform"],
                    model=row["model"],
                    overrides=tuple(row["overrides"].split()),
                    batch=int(row["batch"]),
                    grad_accum=int(row["grad_accum"] or 1),
                    precision=row["precision"],
                    mode=row["mode"],
                    layout=row["layout"],
                    metric=row["metric"],
                    published=float(row["published"]),
                    type=row["type"],
                    tolerance=float(row["tolerance"]),
                    tolerance_unit=row["tolerance_unit"],
                    use=row["use"],
                    source=row["source"],
                    note=row["note"],
                )
            )
    ids = [p.id for p in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate point ids in {path.name}")
    for p in rows:
        if p.use not in USES or p.tolerance_unit not in ("rel", "points") or p.type not in ("M", "V", "D"):
            raise ValueError(f"{path.name} row {p.id}: bad use/tolerance_unit/type")
    return tuple(rows)
