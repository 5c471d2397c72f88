"""The files each run leaves (and MLflow stores as artifacts): config.yaml, result.json,
roofline.svg (as ``run.plots`` says: ``auto`` for measured runs, ``always``, ``never``) and subtasks.csv.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Mapping

import yaml

from dabench.metrics.summary import roofline_points
from dabench.report.roofline_plot import roofline_svg
from dabench.runtime.sinks import cell, copy_file, copy_tree, make_dir, write_text
from dabench.tracking.redact import redact_value


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


MAX_SOURCE_FILE_BYTES = 256 * 2**20  #: larger vendor files stay where they are (their path is in result.json)


def copy_sources(paths: list[str], folder: Path) -> list[str]:
    """Copy the files a profile names (vendor logs, compile reports) into ``folder``; returns what was skipped."""
    skipped = []
    for name in paths:
        source = Path(name)
        if not source.exists():
            skipped.append(f"{name}: missing")
        elif source.is_dir():
            copy_tree("run_dir", source, folder / source.name)
        elif source.stat().st_size > MAX_SOURCE_FILE_BYTES:
            skipped.append(f"{name}: larger than {MAX_SOURCE_FILE_BYTES // 2**20} MiB")
        else:
            copy_file("run_dir", source, folder / source.name)
    return skipped


def wants_plot(config: Mapping[str, Any], mode: str) -> bool:
    """Whether a run of ``mode`` draws its roofline SVG under ``run.plots`` (checked by the schema)."""
    choice = str(((config.get("run") or {}).get("plots")) or "auto")
    return choice == "always" or (choice == "auto" and mode != "predict")


def write_artifacts(folder: Path, config: Mapping[str, Any], result, title: str, data_copies: int) -> Path:
    """Write the run's files (see the module docstring) into ``folder``; vendor sources under ``sources/``."""
    make_dir("run_dir", folder)
    write_text("run_dir", folder / "config.yaml", yaml.safe_dump(redact_value(dict(config)), sort_keys=False))
    profile = result.profile if result.profile is not None else result.predicted
    validate = result.predicted is not None and result.profile is not None
    document = {
        "status": result.status.value,
        "reason": result.reason,
        "mode": result.mode,
        "notes": result.notes,
        "diagnosis": list(result.diagnosis) if result.diagnosis else None,
        "metrics": result.metrics,
        "ceilings": vars(result.ceilings) if result.ceilings else None,
        "profile": profile.to_dict() if profile is not None else None,
        "predicted_profile": result.predicted.to_dict() if validate else None,
    }
    if profile is not None and profile.artifacts:
        document["sources_skipped"] = copy_sources(profile.artifacts, folder / "sources")
    write_text("run_dir", folder / "result.json", json.dumps(_finite(redact_value(document)), indent=1, default=str))
    ceilings = result.ceilings
    if profile is not None and result.graph is not None and ceilings is not None:
        peak, bandwidth, level = ceilings.peak_flops, ceilings.bandwidth_Bps, ceilings.memory_level
        if wants_plot(config, result.mode) and math.isfinite(peak) and math.isfinite(bandwidth):
            points = roofline_points(result.graph, profile, ceilings, data_copies)
            also = roofline_points(result.graph, result.predicted, ceilings, data_copies) if validate else None
            svg = roofline_svg(points, peak, bandwidth, title, profile.mode == "predict", level, also)
            write_text("run_dir", folder / "roofline.svg", svg)
        handle = io.StringIO(newline="")
        kinds = sorted({k for s in profile.subtasks for k in s.units})
        writer = csv.writer(handle)
        writer.writerow(["name", "time_s", "rate_samples_per_s", "flops", *[f"units.{k}" for k in kinds]])
        writer.writerows(
            [cell(s.name), s.time_s, s.rate, s.flops, *[s.units.get(k) for k in kinds]] for s in profile.subtasks
        )
        write_text("run_dir", folder / "subtasks.csv", handle.getvalue())
    return folder
