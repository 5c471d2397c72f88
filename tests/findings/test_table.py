"""The findings registry (dabench/findings): statuses computed from provenance and the model,
the generated table in docs/perfmodel.md current, and tests/findings/test_findings.py in agreement."""

import dataclasses
import inspect

import pytest
import yaml

from dabench.findings import FITTED, NOT_REPRODUCED, PREDICTED, Finding, Measured, fitted_by, status, table
from dabench.findings.registry import FINDINGS
from dabench.fit.points import load_points
from dabench.fit.sources import CONF_HARDWARE, Provenance
from tests.findings import test_findings

IDS = [f.id for f in FINDINGS]


@pytest.fixture(scope="module")
def computed():
    return {row.finding.id: row for row in table.rows()}


def test_the_table_in_docs_is_current(computed):
    block = table.markdown(list(computed.values()))
    assert table.doc_block() == block, "docs/perfmodel.md's findings table is stale: dabench findings --write"


def test_every_finding_has_real_tests_points_and_platforms():
    points = {p.id: p.platform for p in load_points()}
    assert len(set(IDS)) == len(IDS)
    for f in FINDINGS:
        assert f.platform in ("wse2", "rdu", "ipu") and test_findings.CHECKS.get(f.id), f.id
        assert f.claim and f.locator and f.target, f.id
        assert all(points.get(p) == f.platform for p in f.points), (f.id, f.points)
        for name in test_findings.CHECKS[f.id]:
            assert inspect.isfunction(getattr(test_findings, name, None)), (f.id, name)


def test_every_constant_sourced_from_the_paper_says_which_finding_it_was_set_from():
    """A ``source`` entry citing the DABench-LLM paper carries ``finding:`` (ids, or [] for a figure the
    paper states rather than a finding it was set from); every id it names is in the registry."""
    for path in sorted((CONF_HARDWARE / "sources").glob("*.yaml")):
        for key, entry in (yaml.safe_load(path.read_text()) or {}).items():
            body = (entry or {}).get("source") or (entry or {}).get("uncertain")
            if not isinstance(body, dict):
                continue
            if "2601.19904" in str(body.get("document", "")) and "source" in entry:
                assert "finding" in body, f"{path.name} {key}: cites the paper; add finding: [<ids>] or []"
            named = body.get("finding") or []
            for finding_id in [named] if isinstance(named, str) else named:
                assert finding_id in IDS, f"{path.name} {key}: unknown finding {finding_id!r}"


def _marks(function) -> tuple[list, list]:
    """(strict xfail marks on the function or any of its parameter sets, non-strict xfail marks)."""
    marks = list(getattr(function, "pytestmark", []))
    for mark in list(marks):
        if mark.name == "parametrize":
            for param in mark.args[1]:
                marks += list(getattr(param, "marks", ()))
    xfails = [m for m in marks if m.name == "xfail"]
    return [m for m in xfails if m.kwargs.get("strict")], [m for m in xfails if not m.kwargs.get("strict")]


@pytest.mark.parametrize("finding_id", IDS)
def test_the_findings_tests_report_its_status(finding_id, computed):
    """not reproduced: a strict xfail whose reason has the numbers; predicted or fitted: no xfail on a
    test no not-reproduced finding shares; fitted: a test says "fitted" (name, docstring or reason)."""
    row = computed[finding_id]
    functions = {name: getattr(test_findings, name) for name in test_findings.CHECKS[finding_id]}
    marks = {name: _marks(fn) for name, fn in functions.items()}
    assert not any(loose for _, loose in marks.values()), f"{finding_id}: xfail without strict=True"
    if row.status == NOT_REPRODUCED:
        strict = [m for s, _ in marks.values() for m in s]
        assert strict, f"{finding_id} is not reproduced ({row.measured.value}) but none of its tests is a strict xfail"
        assert all(any(c.isdigit() for c in m.kwargs.get("reason", "")) for m in strict), "xfail reason needs numbers"
        return
    shared = {t for i, other in computed.items() if other.status == NOT_REPRODUCED for t in test_findings.CHECKS[i]}
    for name, (strict, _) in marks.items():
        assert name in shared or not strict, f"{finding_id} is {row.status} but {name} is a strict xfail"
    if row.status == FITTED:
        texts = [name + (fn.__doc__ or "") + " ".join(m.kwargs.get("reason", "") for m in marks[name][0])
                 for name, fn in functions.items()]  # fmt: skip
        assert any("fitted" in text.lower() for text in texts), f"{finding_id} is fitted ({row.fitted_by}): say so"


# ------------------------------------------------------------------- the status rules on made-up provenance


def _finding(points=(), met=True) -> Finding:
    return Finding("made-up", "wse2", "claim", "locator", "target", "setting", points, lambda: Measured("1", met))


def _sources(monkeypatch, entries):
    monkeypatch.setattr("dabench.findings.load_sources", lambda arch: {e.path: e for e in entries})


def test_a_constant_fitted_to_one_of_the_findings_points_makes_it_fitted(monkeypatch):
    _sources(monkeypatch, [Provenance("options.k", "fitted", "", ("P1", "P2"), (0, 1))])
    row = status(_finding(points=("P2",), met=False))
    assert row.status == FITTED and row.fitted_by == ("options.k (fitted to P2)",) and not row.measured.met
    assert status(_finding(points=("P3",))).status == PREDICTED


def test_a_source_set_from_the_finding_makes_it_fitted(monkeypatch):
    entry = Provenance("options.k", "source", "figure", document="DABench-LLM paper", locator="mission.md")
    _sources(monkeypatch, [dataclasses.replace(entry, findings=("made-up",))])
    assert status(_finding()).status == FITTED
    _sources(monkeypatch, [entry])  # the same source, not set from the finding
    assert fitted_by(_finding()) == ()


def test_without_a_constant_set_from_it_the_model_decides(monkeypatch):
    _sources(monkeypatch, [Provenance("options.k", "fitted", "", ("P1",), (0, 1))])
    assert status(_finding(met=True)).status == PREDICTED
    assert status(_finding(met=False)).status == NOT_REPRODUCED


def test_a_finding_not_reproduced_names_its_evidence(computed):
    missing = [i for i, row in computed.items() if row.status == NOT_REPRODUCED and not row.finding.evidence]
    assert not missing, f"not reproduced without evidence (Finding.evidence): {missing}"
