"""Export a PopVision ``profile.pop`` to the JSON dabench parses (:mod:`dabench.platforms.ipu.ingest`).

``python -m dabench.platforms.ipu.export profile.pop out.json``, where the Poplar SDK's ``pva`` is
importable (standard library only besides it). Fields: docs/vendors.md, "Artifact parsers".
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Dict, List

FORMAT = "dabench.popvision/1"
SKIPPED_PROGRAM_TYPES = ("Sync", "StreamCopy", "GlobalExchange")
TARGET_KEYS = (
    "numIPUs",
    "tilesPerIpu",
    "bytesPerTile",
    "bytesPerIPU",
    "clockFrequency",
    "numReplicas",
    "ipusPerReplica",
)


def _target(report) -> Dict[str, Any]:
    values = {key: getattr(report.compilation.target, key, None) for key in TARGET_KEYS}
    return {key: float(v) if key == "clockFrequency" else int(v) for key, v in values.items() if v is not None}


def tile_stats(tiles: List[float]) -> Dict[str, float]:
    """One IPU's memory_bytes, tiles_used and per-tile mean and std from its bytes per tile."""
    mean = sum(tiles) / len(tiles) if tiles else 0.0
    std = math.sqrt(sum((t - mean) ** 2 for t in tiles) / len(tiles)) if tiles else 0.0
    return {
        "memory_bytes": sum(tiles),
        "tiles_used": sum(1 for t in tiles if t > 0),
        "tile_memory_mean": mean,
        "tile_memory_std": std,
    }


def _program_type(step) -> str:
    program = getattr(step, "program", None)
    kind = getattr(program, "type", None)
    return str(getattr(kind, "name", kind))


def summarise(report) -> Dict[str, Any]:
    """The dabench JSON of an opened pva report (see module doc)."""
    target = _target(report)
    tiles_per_ipu = target["tilesPerIpu"]
    n_ipus = target.get("numIPUs") or 1
    memory = [float(tile.memory.total.includingGaps) for tile in report.compilation.tiles]
    per_ipu = [memory[i * tiles_per_ipu : (i + 1) * tiles_per_ipu] for i in range(n_ipus)]
    ipus = [{"ipu": i, **tile_stats(tiles), "tile_memory": tiles} for i, tiles in enumerate(per_ipu)]
    steps = list(getattr(getattr(report, "execution", None), "steps", []) or [])
    # cycles per IPU over the steps that compute (syncs and copies left out), when there are steps
    counted = [s for s in steps if not any(skip in _program_type(s) for skip in SKIPPED_PROGRAM_TYPES)]
    per_step = [[float(ipu_step.cycles) for ipu_step in step.ipus] for step in counted]
    for i, entry in enumerate(ipus if steps else []):
        entry["cycles"] = sum((cycles[i] for cycles in per_step if i < len(cycles)), 0.0)
    version = getattr(getattr(report, "poplarVersion", None), "string", "")
    return {"format": FORMAT, "poplar_version": version, "target": target, "ipus": ipus}


def export_file(profile_pop: str, out_json: str) -> Dict[str, Any]:
    import pva

    summary = summarise(pva.openReport(profile_pop))
    summary["source"] = profile_pop
    with open(out_json, "w") as handle:
        json.dump(summary, handle, indent=1)
    return summary


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m dabench.platforms.ipu.export profile.pop out.json", file=sys.stderr)
        raise SystemExit(2)
    export_file(sys.argv[1], sys.argv[2])
