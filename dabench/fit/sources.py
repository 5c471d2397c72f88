"""Where every number in conf/hardware/<arch>.yaml comes from: conf/hardware/sources/<arch>.yaml
(each entry one of ``source``, ``uncertain`` or ``setting``) and, for a knob fitted to calibration
points, its declaration (``knob(prior=Provenance(bounds=..., points=...))`` in
dabench/platforms/<family>/knobs.py: kind ``fitted``, declared there only).

Format: docs/perfmodel.md, "Knobs, sources and calibration" (provenance).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any, Iterator

from dabench.config.fields import specs
from dabench.config.files import fresh_file
from dabench.config.paths import CONF_DIR
from dabench.core.platforms import platform
from dabench.fit.points import load_points

CONF_HARDWARE = CONF_DIR / "hardware"
KINDS = ("source", "uncertain", "setting")  #: a sources YAML's kinds; ``fitted`` is declared with the knob


@dataclass(frozen=True)
class Provenance:
    """One number's provenance; its defaults make a knob's fitted prior, ``Provenance(bounds=(lo, hi),
    points=(ids in dabench/fit/points.csv))`` (its path is filled in by :func:`fitted`)."""

    path: str = ""  #: e.g. "options.region_fill"
    kind: str = "fitted"  #: source | uncertain | fitted | setting (| invalid)
    text: str = ""  #: source: the figure; uncertain: the estimate; setting: the reason ("" for fitted)
    points: tuple[str, ...] = ()  #: fitted: calibration point ids
    bounds: tuple[float, float] | None = None  #: fitted: fitting bounds; a prior: [low, high] a fold refits within
    document: str = ""  #: source (and optionally uncertain): the document's title
    locator: str = ""  #: where in the document: section, table, page, file path or URL
    reason: str = ""  #: uncertain: why no document gives the number
    findings: tuple[str, ...] = ()  #: source: the paper's findings (dabench/findings) the value was set from
    prior: Provenance | None = None  #: source / uncertain: bounds for a fold that leaves its document out


def hardware_yaml(arch: str) -> dict[str, Any]:
    return fresh_file(CONF_HARDWARE / f"{arch}.yaml")


#: the hardware lists with numbers: (list, the field naming an entry, its number fields)
_LIST_FIELDS = (
    ("memory", "name", ("capacity_bytes", "bandwidth_Bps")),
    ("compute_units", "kind", ("count",)),
    ("links", "name", ("bandwidth_Bps", "latency_s")),
)


def constant_paths(spec: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(path, value) of every number in a hardware YAML and of every option."""
    for precision, value in (spec.get("peak_flops") or {}).items():
        if value is not None:
            yield f"peak_flops.{precision}", value
    for group, name, keys in _LIST_FIELDS:
        for entry in spec.get(group) or ():
            for key in keys:
                if entry.get(key) is not None:
                    yield f"{group}.{entry[name]}.{key}", entry[key]
    for key, value in (spec.get("options") or {}).items():
        yield f"options.{key}", value


def _ids(value: Any) -> tuple[str, ...]:
    """A ``finding:`` entry (none, one id or a list of ids) as a tuple."""
    return (str(value),) if isinstance(value, str) else tuple(str(v) for v in value or ())


def _prior(path: str, body: Any) -> Provenance | str | None:
    """A ``prior: {bounds: [lo, hi], document, locator, figure}`` mapping as a ``source`` with
    bounds: those a ``source`` or ``uncertain`` constant read from a calibration document takes
    when cross-validation leaves that document out, from a document that is no calibration
    point's (its text: what the document says, or the assumption and its reason); a string saying
    what is wrong when it is malformed."""
    if body is None:
        return None
    bounds = body.get("bounds") if isinstance(body, dict) else None
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        return f"prior.bounds must be [low, high] numbers, not {bounds!r}"
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        return f"prior.bounds must be finite with low < high, not {bounds!r}"
    return Provenance(
        path,
        "source",
        str(body.get("figure") or "").strip(),
        bounds=(low, high),
        document=str(body.get("document") or "").strip(),
        locator=str(body.get("locator") or "").strip(),
    )


def load_sources(arch: str) -> dict[str, Provenance]:
    """path -> Provenance from conf/hardware/sources/<arch>.yaml ({} when the file is missing), then
    the :func:`fitted` knobs of ``arch``."""
    raw = fresh_file(CONF_HARDWARE / "sources" / f"{arch}.yaml")
    return {**{key: _provenance(key, entry or {}) for key, entry in raw.items()}, **fitted(arch)}


def _provenance(key: str, entry: dict[str, Any]) -> Provenance:
    """One entry's Provenance; kind ``invalid`` (its text says why) when it is malformed."""
    kinds = [k for k in KINDS if k in entry]
    if len(kinds) != 1:
        return Provenance(key, "invalid", f"needs exactly one of {KINDS}, has {sorted(entry)}")
    (kind,) = kinds
    body = entry[kind]
    if kind == "setting":
        return Provenance(key, kind, str(body or "").strip())
    if not isinstance(body, dict):
        return Provenance(
            key,
            "invalid",
            f"{kind} must be a mapping "
            f"({'document, locator, figure' if kind == 'source' else 'reason, estimate'}), "
            f"not {type(body).__name__}",
        )
    prior = _prior(key, body.get("prior"))
    if isinstance(prior, str):
        return Provenance(key, "invalid", prior)
    return Provenance(
        key,
        kind,
        str(body.get("figure" if kind == "source" else "estimate") or "").strip(),
        document=str(body.get("document") or "").strip(),
        locator=str(body.get("locator") or "").strip(),
        reason=str(body.get("reason") or "").strip(),
        findings=_ids(body.get("finding")),
        prior=prior,
    )


def fitted(arch: str) -> dict[str, Provenance]:
    """path -> prior of each knob of platform ``arch`` declared with one (``knob(prior=...)``), in
    declaration order; {} for a preset (wse3, cuda_a100: it inherits its platform's fitted values)."""
    options = platform(arch).options
    declared = specs(options()) if options else {}
    return {f"options.{n}": replace(s.prior, path=f"options.{n}") for n, s in declared.items() if s.prior}


_FILE = re.compile(r"[\w.{},*-]+/[\w./{},*-]+\.\w+")


def _files(text: str) -> set[str]:
    """File paths a locator names, with a compile_report_{7,11,13}.txt pattern expanded."""
    found = set()
    for path in _FILE.findall(text):
        group = re.search(r"\{([\d,]+)\}", path)
        found |= {path.replace(group.group(0), n) for n in group.group(1).split(",")} if group else {path}
    return found


def calibration_source(arch: str, document: str, locator: str) -> str | None:
    """The source of the first calibration point of ``arch`` with this document (or a file its
    locator names), else None."""
    files = _files(locator)
    found = (p for p in load_points() if p.platform == arch and (document == p.document or files & _files(p.locator)))
    return next((p.source_key for p in found), None)


def read_from_calibration(arch: str) -> dict[str, str]:
    """path -> calibration source of every ``source`` or ``uncertain`` constant of ``arch`` whose
    document is a calibration point's (the same document, or a file a point's locator names):
    a number fixed from the data it is checked against, refitted from its prior in the fold
    that leaves that source out."""
    keys = {
        path: calibration_source(arch, entry.document, entry.locator)
        for path, entry in load_sources(arch).items()
        if entry.kind in ("source", "uncertain") and (entry.document or entry.locator)
    }
    return {path: key for path, key in keys.items() if key is not None}
