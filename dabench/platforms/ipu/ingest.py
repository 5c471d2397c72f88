"""PopVision (Graphcore) profiles, as the ``dabench.popvision/1`` JSON that
:mod:`dabench.platforms.ipu.export` writes from a ``profile.pop``.
Format and metrics: docs/vendors.md, "Artifact parsers".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dabench.core.profile import UnitUse
from dabench.ingest.artifact import ArtifactReport, ArtifactSubtask
from dabench.metrics import tier1
from dabench.platforms.ipu.export import tile_stats

FORMAT = "dabench.popvision/1"


def tile_balance(mean_bytes: float, std_bytes: float, bytes_per_tile: float) -> float:
    """1 - std / sqrt(m (B - m)): 1 even, 0 maximally lopsided; 1.0 when all tiles are empty or full."""
    bound = math.sqrt(max(0.0, mean_bytes * (bytes_per_tile - mean_bytes)))
    return 1.0 if bound == 0 else max(0.0, 1.0 - std_bytes / bound)


def _with_tile_stats(ipu: dict[str, Any]) -> dict[str, Any]:
    """An IPU entry with memory_bytes, tiles_used and tile mean/std recomputed from tile_memory."""
    tiles = ipu.get("tile_memory")
    return {**ipu, **tile_stats(tiles)} if tiles else ipu


def is_popvision_json(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT


def parse_popvision(data: dict[str, Any], path: str | None = None) -> ArtifactReport:
    if not is_popvision_json(data):
        raise ValueError(f"{path or 'data'}: not a dabench PopVision export (format {FORMAT!r})")
    target = data["target"]
    ipus = sorted((_with_tile_stats(i) for i in data.get("ipus", [])), key=lambda i: i["ipu"])
    n_ipus = int(target.get("numIPUs") or len(ipus))
    tiles_per_ipu, bytes_per_tile = float(target["tilesPerIpu"]), float(target["bytesPerTile"])
    bytes_per_ipu = float(target.get("bytesPerIPU") or tiles_per_ipu * bytes_per_tile)
    clock = float(target.get("clockFrequency") or 0)
    report = ArtifactReport(source="popvision_json", files=[path] if path else [], subtask_kind="stage", chips=n_ipus)
    if len(ipus) != n_ipus:
        report.problems.append(f"target.numIPUs is {n_ipus} but {len(ipus)} IPU entries are present")
    if sorted(i["ipu"] for i in ipus) != list(range(len(ipus))):
        report.problems.append(f"IPU ids {[i['ipu'] for i in ipus]} are not 0..{len(ipus) - 1}")
    report.units["tiles"] = UnitUse(sum(float(i.get("tiles_used", 0)) for i in ipus), tiles_per_ipu * n_ipus)
    report.units["ipu_memory"] = UnitUse(sum(float(i["memory_bytes"]) for i in ipus), bytes_per_ipu * n_ipus)
    for ipu in ipus:
        cycles = ipu.get("cycles")
        seconds = cycles / clock if cycles is not None and clock else None
        report.subtasks.append(
            ArtifactSubtask(
                name=f"ipu{ipu['ipu']}",
                time_s=seconds,
                cycles=cycles if seconds is None else None,
                units={"tiles": float(ipu.get("tiles_used", 0)), "ipu_memory": float(ipu["memory_bytes"])},
            )
        )
        prefix = f"ipu.{ipu['ipu']}"
        report.extra[f"{prefix}.memory_fraction"] = float(ipu["memory_bytes"]) / bytes_per_ipu
        if "tile_memory_mean" in ipu and "tile_memory_std" in ipu:
            balance = tile_balance(ipu["tile_memory_mean"], ipu["tile_memory_std"], bytes_per_tile)
            report.extra[f"{prefix}.tile_balance"] = balance
    if ipus:
        report.memory_bytes["sram"] = max(float(i["memory_bytes"]) for i in ipus)
    if report.subtasks and all(s.cost() is not None for s in report.subtasks):
        report.load_imbalance_basis = "per-IPU execution cycles"
        report.bottleneck = max(report.subtasks, key=lambda s: s.cost()).name
    elif ipus:
        memory = [float(i["memory_bytes"]) for i in ipus]
        report.load_imbalance = tier1.load_imbalance(memory)
        report.load_imbalance_basis = "per-IPU memory use (no execution profile)"
        report.bottleneck = f"ipu{ipus[memory.index(max(memory))]['ipu']}"
    if data.get("poplar_version"):
        report.info["poplar.version"] = str(data["poplar_version"])
    return report


LOOKS_FOR = "a dabench PopVision JSON"


def _is_popvision_file(path: Path) -> bool:
    try:
        return path.name.endswith(".json") and is_popvision_json(json.loads(path.read_text()))
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested too deep
        return False


def detect(path: Path) -> tuple[str, Path] | None:
    """(format, the path to parse) of a PopVision JSON (or the first in a folder), or None."""
    found = [path] if path.is_file() else sorted(path.glob("*.json"))
    return next((("popvision_json", p) for p in found if _is_popvision_file(p)), None)


def parse(fmt: str, target: Path) -> ArtifactReport:
    return parse_popvision(json.loads(target.read_text()), str(target))
