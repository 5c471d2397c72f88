"""Golden predictions: no model number changes unless on purpose.

tests/golden/predictions.json is written by tests/golden/record.py: every configuration of every
default sweep and a seeded sample of every shipped Optuna sweep. It is rewritten only with an
intended model change (the commit says which); a refactoring leaves it alone. Each case is
predicted again here and compared status by status, metric by metric. The fast suite checks every
fourth case; the slow suite checks all of them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

CASES = json.loads(Path(__file__).with_name("predictions.json").read_text())


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):  # 'nan' / 'inf' as written
        return str(a) == str(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _check(case: dict) -> None:
    from dabench import predict

    r = predict(case["overrides"])
    want = case["result"]
    assert r.status.value == want["status"], (case["overrides"], r.reason)
    assert r.mode == want["mode"]
    assert (list(r.diagnosis) if r.diagnosis else None) == want["diagnosis"]
    got = {k: v for k, v in r.metrics.items() if isinstance(v, (int, float))}
    missing = sorted(set(want["metrics"]) - set(got))  # new metrics (bands, ...) may be added, none lost
    assert not missing, (case["overrides"], missing)
    different = {
        k: (got[k], v)
        for k, v in want["metrics"].items()
        if not _same(v if isinstance(v, str) else float(v), got[k] if isinstance(v, str) else float(got[k]))
    }
    assert not different, (case["overrides"], different)


def _id(case: dict) -> str:
    return case["source"] + ":" + " ".join(o for o in case["overrides"] if "=" in o)[:80]


@pytest.mark.parametrize("case", CASES[::4], ids=_id)
def test_golden_sample(case):
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for i, c in enumerate(CASES) if i % 4], ids=_id)
def test_golden_rest(case):
    _check(case)


def test_golden_covers_every_shipped_sweep():
    root = Path(__file__).resolve().parents[2]
    sources = {c["source"] for c in CASES}
    assert {f"default_sweep/{p.stem}" for p in (root / "conf" / "default_sweep").glob("*.yaml")} <= sources
    assert {f"sweeps/{p.stem}" for p in (root / "sweeps").glob("*.yaml")} <= sources
