"""The public calibration points (points.csv: one row per published number, with its source).

Columns of points.csv:

- ``id``: short name (C1, WSE-L6, ...); ``fitted:`` entries in conf/hardware/sources/ cite these.
- ``platform``: the hardware config (wse2, ipu, rdu, ...); ``model``: the model config.
- ``overrides``: extra Hydra-style overrides, space separated (``model.n_layers=6``,
  ``hardware.options.execution_mode=weight_streaming``, ``parallel=dp parallel.degree=2``).
- ``batch``, ``grad_accum``, ``precision``: the run's settings as the source gives them.
- ``mode``, ``layout``: how the source ran it (documentation; the overrides carry what the model uses).
- ``metric``: the predicted quantity compared (samples_per_s, tokens_per_s, allocation_pct).
- ``published``: the source's number, in the metric's unit.
- ``type``: M (measured, printed by a run), V (a vendor compiler estimate), D (derived; the note
  gives the arithmetic).
- ``tolerance``, ``tolerance_unit``: ``rel`` (a fraction of the published value) or ``points``
  (absolute percentage points).
- ``use``: ``check`` (asserted within tolerance), ``fit`` (also used to fit, and asserted), or
  ``excluded`` (kept for reference; the note says why the model does not cover it).
- ``source``, ``note``: where the number is printed; its uncertainty and anything the model
  approximates.
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
