"""The CPU model's prediction error, the evidence of its band: an ok validate run of a platform
priced at this machine's calibrated ceilings (``host_cpu``) records ``|log(predicted / measured)|``
of its samples/s with its reach coordinates (:func:`record`) in ``$DABENCH_CACHE_DIR/validation.json``,
under the calibration key (CPU model, threads, torch) and the model version; :func:`points` gives
them back as band points, :func:`shipped` the CPU validation grid's (benchmarks/validate_cpu.py),
measured on one machine (perfmodel/constants.py picks which of them sizes the band).
The file is optional: a damaged one is named in one warning and not used. docs/perfmodel.md,
"Out-of-sample error and bands".
"""

from __future__ import annotations

import functools
import logging
import math
import time
from pathlib import Path
from typing import Any, Mapping

from dabench.core.readers import DamagedFile, mapping, read_json
from dabench.host.cache import calibration_cache
from dabench.runtime.sinks import write_json

log = logging.getLogger("dabench")
KEEP = 200  #: the newest validate errors kept per calibration key and model version
SOURCE = "this machine's validate runs"  #: what a band from these errors says it came from
GRID = "the CPU validation grid"  #: ... and from the shipped ones
#: the CPU validation grid's errors, measured on one machine (benchmarks/validate_cpu.py --ship)
SHIPPED = Path(__file__).resolve().parents[1] / "platforms" / "cpu" / "validation.json"


def path() -> Path:
    """``validation.json`` beside the calibration cache."""
    return calibration_cache().parent / "validation.json"


def machine() -> str:
    """This machine as its calibration names it: '<cpu model>|threads=<n>|torch=<version>'."""
    from dabench.host.calibrate import calibration_key

    return calibration_key("validate").removesuffix("|validate")


def key(model_hash: str) -> str:
    """The calibration key of this process's threads, with ``model_hash`` (errors of another model or
    machine are not this one's)."""
    return f"{machine()}|validate|model={model_hash}"


def _read() -> dict[str, Any]:
    try:
        return mapping(path(), read_json(path(), 2**22))
    except FileNotFoundError:
        return {}
    except DamagedFile as error:
        log.warning("validation record not used: %s", error)
        return {}


def _usable(row: Any) -> bool:
    if not isinstance(row, dict) or not isinstance(row.get("coords"), dict):
        return False
    values = [row.get("score"), row["coords"].get("size"), row["coords"].get("chips")]
    return all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in values)


def points(model_hash: str) -> list[dict[str, Any]]:
    """This machine's recorded errors of model ``model_hash`` as band points (``id``, ``coords``,
    ``score``)."""
    rows = _read().get(key(model_hash))
    return [r for r in rows if _usable(r)] if isinstance(rows, list) else []


def shipped() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The shipped grid's errors as band points (each with its ``machine`` coordinate) and the grid's
    record; nothing where it is missing or damaged (named in one warning per version of the file)."""
    try:
        stat = SHIPPED.stat()
        version = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = None
    return _shipped(SHIPPED, version)


@functools.lru_cache(maxsize=4)
def _shipped(path: Path, version: tuple[int, int] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    try:
        grid = mapping(path, read_json(path, 2**20))
        rows = [r for r in grid.get("points") or [] if _usable(r)] if isinstance(grid.get("points"), list) else []
        if not rows:
            raise DamagedFile(path, "'points' holds no error with reach coordinates and a finite score")
    except (FileNotFoundError, DamagedFile) as error:
        log.warning("the CPU validation grid is not used: %s", error)
        return [], {}
    return [{**r, "coords": {**r["coords"], "machine": str(grid.get("machine"))}} for r in rows], grid


def record(model_hash: str, scored: Mapping[str, Any]) -> None:
    """Keep one validate run's band point (perfmodel/constants.py ``validate_point``); a failed write is
    a warning: the run goes on."""
    if not math.isfinite(scored["score"]):
        return
    data = _read()
    here = key(model_hash)
    row = {**scored, "coords": dict(scored["coords"]), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    data[here] = [r for r in (data.get(here) or []) if _usable(r)][-(KEEP - 1) :] + [row]
    try:
        write_json("calibration_cache", path(), data, indent=1, sort_keys=True)
    except OSError as error:
        log.warning("validate error not recorded: %s", error)
