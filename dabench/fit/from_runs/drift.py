"""Drift: a constant set whose platform's recent measured runs leave its band more often than the
band's nominal rate.

Contract: :func:`drift` takes a set and prepared-or-not points and returns, per banded platform,
how many fall outside the band and the binomial tail probability of that many misses.
Details: docs/fitting.md, "Drift".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from dabench.fit.cv import NOMINAL
from dabench.fit.from_runs.points import RunPoint
from dabench.fit.from_runs.predict import base_options, predict, prepare, quiet_model
from dabench.perfmodel.constants import band as band_of


@dataclass
class Drift:
    name: str
    arch: str
    n: int
    outside: int
    nominal: float
    p_value: float

    @property
    def drifted(self) -> bool:
        return self.n > 0 and self.p_value < 0.05 and self.outside / self.n > 1 - self.nominal


def drift(name: str, constant_set: Mapping[str, Any], points: list[RunPoint]) -> list[Drift]:
    """Per platform of ``constant_set`` with a band: how many of ``points`` (recent measured runs
    of that platform and, where the set names one, machine) fall outside the band around the
    set's prediction, and the binomial tail probability of that many misses at the band's
    nominal rate (a set drifted when it misses more often than 1 - nominal, p < 0.05)."""
    from scipy.stats import binom

    out = []
    for arch, entry in (constant_set.get("platforms") or {}).items():
        factor = (entry.get("band") or {}).get("factor")
        if not factor:
            continue
        mine = [p for p in points if p.arch == arch and (not entry.get("host_key") or p.host_key == entry["host_key"])]
        bad = {u.run_id for u in prepare(mine)}
        mine = [p for p in mine if p.run_id not in bad]
        options = base_options(arch)
        if name != "published":  # the set's own fitted knobs (it may be a FILE not on the search path)
            options.update(
                {
                    k.split(".", 1)[1]: c["value"]
                    for k, c in (entry.get("constants") or {}).items()
                    if k.startswith("options.") and c.get("kind") == "fitted"
                }
            )
        outside = 0
        for p in mine:
            with quiet_model():
                value = predict(p, options)
            interval = band_of(arch, value, constant_set) if value > 0 else None
            if interval is None or not (interval[0] <= p.samples_per_s <= interval[1]):
                outside += 1
        nominal = float(constant_set.get("nominal_coverage") or NOMINAL)
        p_value = float(binom.sf(outside - 1, len(mine), 1 - nominal)) if mine else 1.0
        out.append(Drift(name, arch, len(mine), outside, nominal, p_value))
    return out
