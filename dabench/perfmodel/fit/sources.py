"""Where every number in conf/hardware/<arch>.yaml comes from: conf/hardware/sources/<arch>.yaml.

Convention (checked by tests/perfmodel/test_sources.py for every shipped hardware file):

- A key is the number's path in the hardware YAML: ``peak_flops.<precision>``,
  ``memory.<level>.capacity_bytes`` / ``.bandwidth_Bps``, ``compute_units.<kind>.count``,
  ``links.<name>.bandwidth_Bps`` / ``.latency_s``, ``options.<knob>`` (every knob, numeric or not).
- Its value is a mapping with exactly one of:

  - ``source: "<vendor document, paper or public artifact, and the figure it gives>"``
  - ``fitted: {points: [<ids in calibration/points.csv>], bounds: [low, high]}`` -- refitted by
    ``python -m dabench fit`` within the bounds; the YAML holds the last fitted value.
  - ``setting: "<why this default>"`` -- a user's choice, not a physical constant (execution
    mode, replicas, tiles, device iterations); options only.

- Every number of the hardware YAML has an entry (``null`` values are measured at run time and
  need none), and every entry names a number that exists.

The map lives beside the hardware YAML rather than inside it so that Hydra does not compose it
into every run's config (it would become dozens of MLflow params per run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import yaml

from dabench.config.paths import CONF_DIR

CONF_HARDWARE = CONF_DIR / "hardware"
KINDS = ("source", "fitted", "setting")


@dataclass(frozen=True)
class Provenance:
    path: str  #: e.g. "options.region_fill"
    kind: str  #: source | fitted | setting
    text: str  #: the source or setting text ("" for fitted)
    points: tuple[str, ...] = ()  #: fitted: calibration point ids
    bounds: tuple[float, float] | None = None  #: fitted: fitting bounds


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str):
        try:
            float(value)
            return True
        except ValueError:
            return False
    return False


def hardware_yaml(arch: str) -> dict[str, Any]:
    return yaml.safe_load((CONF_HARDWARE / f"{arch}.yaml").read_text()) or {}


def constant_paths(spec: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(path, value) of every number in a hardware YAML and of every option."""
    for precision, value in (spec.get("peak_flops") or {}).items():
        if value is not None:
            yield f"peak_flops.{precision}", value
    for level in spec.get("memory") or ():
        for key in ("capacity_bytes", "bandwidth_Bps"):
            if level.get(key) is not None:
                yield f"memory.{level['name']}.{key}", level[key]
    for unit in spec.get("compute_units") or ():
        if unit.get("count") is not None:
            yield f"compute_units.{unit['kind']}.count", unit["count"]
    for link in spec.get("links") or ():
        for key in ("bandwidth_Bps", "latency_s"):
            if link.get(key) is not None:
                yield f"links.{link['name']}.{key}", link[key]
    for key, value in (spec.get("options") or {}).items():
        yield f"options.{key}", value


def load_sources(arch: str) -> dict[str, Provenance]:
    """path -> Provenance from conf/hardware/sources/<arch>.yaml ({} when the file is missing)."""
    path = CONF_HARDWARE / "sources" / f"{arch}.yaml"
    if not path.exists():
        return {}
    raw = yaml.safe_load(path.read_text()) or {}
    out = {}
    for key, entry in raw.items():
        entry = entry or {}
        kinds = [k for k in KINDS if k in entry]
        if len(kinds) != 1:
            out[key] = Provenance(key, "invalid", f"needs exactly one of {KINDS}, has {sorted(entry)}")
            continue
        kind = kinds[0]
        if kind == "fitted":
            fit = entry["fitted"] or {}
            bounds = fit.get("bounds")
            out[key] = Provenance(key, kind, "", tuple(fit.get("points") or ()),
                                  (float(bounds[0]), float(bounds[1])) if bounds else None)
        else:
            out[key] = Provenance(key, kind, str(entry[kind] or "").strip())
    return out


def fitted(arch: str) -> dict[str, Provenance]:
    """The ``fitted`` entries of ``arch`` (path -> Provenance)."""
    return {k: v for k, v in load_sources(arch).items() if v.kind == "fitted"}


def problems(arch: str, point_ids: set[str] | None = None) -> list[str]:
    """Everything wrong with ``arch``'s provenance map (empty when complete and consistent)."""
    spec = hardware_yaml(arch)
    sources = load_sources(arch)
    found = []
    if not sources:
        return [f"conf/hardware/sources/{arch}.yaml is missing or empty"]
    constants = dict(constant_paths(spec))
    for path, value in constants.items():
        entry = sources.get(path)
        if entry is None:
            found.append(f"{arch}: {path} = {value!r} has no entry in sources/{arch}.yaml")
            continue
        if entry.kind == "invalid":
            found.append(f"{arch}: {path}: {entry.text}")
        elif entry.kind == "setting" and not path.startswith("options."):
            found.append(f"{arch}: {path}: only options can be a 'setting'; a constant needs a source or a fit")
        elif entry.kind in ("source", "setting") and len(entry.text) < 10:
            found.append(f"{arch}: {path}: {entry.kind} text too short to identify the source: {entry.text!r}")
        elif entry.kind == "fitted":
            if not entry.points:
                found.append(f"{arch}: {path}: fitted without the points it was fitted to")
            if entry.bounds is None or not entry.bounds[0] < entry.bounds[1]:
                found.append(f"{arch}: {path}: fitted needs bounds [low, high] with low < high")
            elif _is_number(value) and not entry.bounds[0] <= float(value) <= entry.bounds[1]:
                found.append(f"{arch}: {path} = {value} lies outside its fitting bounds {entry.bounds}")
            if point_ids is not None:
                unknown = [p for p in entry.points if p not in point_ids]
                if unknown:
                    found.append(f"{arch}: {path}: fitted to unknown calibration points {unknown}")
    for path in sources:
        if path not in constants:
            found.append(f"{arch}: sources/{arch}.yaml names {path}, which conf/hardware/{arch}.yaml does not have")
    return found
