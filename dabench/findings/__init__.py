"""The DABench-LLM paper's headline findings, each with a status computed (never declared) from
provenance and the model: ``fitted``, ``predicted`` or ``not reproduced`` (:func:`status`).
:data:`~dabench.findings.registry.FINDINGS` holds them; :mod:`.table` the generated docs table.
Docs: docs/perfmodel.md, "The paper's findings".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dabench.fit.points import load_points
from dabench.fit.sources import load_sources

FITTED, PREDICTED, NOT_REPRODUCED = "fitted", "predicted", "not reproduced"
STATUSES = (FITTED, PREDICTED, NOT_REPRODUCED)


@dataclass(frozen=True)
class Measured:
    """The model's value at a finding's setting, and whether it meets the paper's claim."""

    value: str  #: the model's number(s), as the table prints them
    met: bool


@dataclass(frozen=True)
class Finding:
    """One of the paper's claims and how the model is held to it."""

    id: str  #: stable id, e.g. "wse2-mixed-precision" (sources YAML ``finding:`` entries name it)
    platform: str  #: wse2 | rdu | ipu: whose constants can have been set from it
    claim: str  #: the paper's claim with its number
    locator: str  #: where the paper states it
    target: str  #: the bound the model's value must meet, in words
    setting: str  #: the configuration the model is run at
    points: tuple[str, ...]  #: calibration points (fit/points.csv) that carry this finding's numbers
    measure: Callable[[], Measured]  #: runs the model
    evidence: str = ""  #: when the model misses the target: what contradicts the claim or cannot decide it


@dataclass(frozen=True)
class FindingStatus:
    finding: Finding
    status: str  #: one of STATUSES
    fitted_by: tuple[str, ...]  #: "<arch> <path> (<why>)" of each constant set from the finding
    measured: Measured


def fitted_by(finding: Finding) -> tuple[str, ...]:
    """The constants of ``finding.platform`` whose provenance names the finding or one of its points
    (a point the refit leaves out, ``use`` excluded in points.csv, does not count)."""

    excluded = {p.id for p in load_points() if p.use == "excluded"}
    out = []
    for path, entry in load_sources(finding.platform).items():
        if finding.id in entry.findings:
            out.append(f"{path} (source: set from this finding)")
        shared = [p for p in entry.points if p in finding.points and p not in excluded]
        if entry.kind == "fitted" and shared:
            out.append(f"{path} (fitted to {', '.join(shared)})")
    return tuple(out)


def status(finding: Finding) -> FindingStatus:
    """The finding's computed status; the model is run even when a constant was fitted to it."""
    constants = fitted_by(finding)
    measured = finding.measure()
    kind = FITTED if constants else (PREDICTED if measured.met else NOT_REPRODUCED)
    return FindingStatus(finding, kind, constants, measured)
