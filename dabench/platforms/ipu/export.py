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
    per_ipu = [[] for _ in range(n_ipus)]
    for index, tile in enumerate(report.compilation.tiles):
        ipu = index // tiles_per_ipu
        if ipu < n_ipus:
            per_ipu[ipu].append(float(tile.memory.total.includingGaps))
    ipus = [{"ipu": i, **tile_stats(tiles), "tile_memory": tiles} for i, tiles in enumerate(per_ipu)]
    execution = getattr(report, "execution", None)
    steps = list(getattr(execution, "steps", []) or []) if execution is not None else []
    if steps:
        cycles = [0.0] * n_ipus
        for step in steps:
            if any(skip in _program_type(step) for skip in SKIPPED_PROGRAM_TYPES):
                continue
            for i, ipu_step in enumerate(step.ipus):
                if i < n_ipus:
                    cycles[i] += float(ipu_step.cycles)
        for entry, count in zip(ipus, cycles):
            entry["cycles"] = count
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
