"""Every number in conf/hardware/*.yaml is sourced (a document and a locator in it), an
``uncertain`` estimate with its stated reason or, for options, a stated setting:
conf/hardware/sources/<arch>.yaml, convention in dabench/fit/sources.py; or a knob fitted to
calibration points, its prior (bounds and points) declared with the knob and nowhere else."""

import re
from typing import Any

import pytest

from dabench.config.files import fresh_file
from dabench.fit import sources
from dabench.fit.sources import CONF_HARDWARE, Provenance, constant_paths, fitted, hardware_yaml, load_sources
from dabench.perfmodel.constants import load

#: a locator names a place inside a document: a URL, a section, table, figure, page, sheet, row,
#: slide, line, or a file path inside a repository or a reference folder
LOCATOR = re.compile(
    r"(https?://\S+|§\s*\d|\b(section|table|figure|fig\.|page|pp?\.\s*\d|sheet|row|slide|chapter|line|"
    r"appendix|column|cell)\b|[\w.-]+/[\w./-]+|\b[\w-]+\.(md|py|yaml|yml|json|txt|numbers|sh|ipynb|csv|cpp|pdf)\b)",
    re.IGNORECASE,
)
MIN_DOCUMENT, MIN_FIGURE, MIN_REASON = 8, 10, 20  #: shortest acceptable texts (characters)


def reference_problems(entry: Provenance) -> list[str]:
    """What is missing from a ``source`` or ``uncertain`` entry's reference (empty when complete)."""
    found = []
    if entry.kind == "source":
        if len(entry.document) < MIN_DOCUMENT or len(entry.document.split()) < 2:
            found.append(f"source needs a document title (two words or more): {entry.document!r}")
        if not LOCATOR.search(entry.locator):
            found.append(f"source needs a locator (section, table, page, file path or URL): {entry.locator!r}")
        if len(entry.text) < MIN_FIGURE:
            found.append(f"source needs the figure it gives: {entry.text!r}")
    elif entry.kind == "uncertain":
        if len(entry.reason) < MIN_REASON:
            found.append(f"uncertain needs a stated reason ({MIN_REASON}+ characters): {entry.reason!r}")
        if len(entry.text) < MIN_FIGURE:
            found.append(f"uncertain needs the estimate and how it was chosen: {entry.text!r}")
        if entry.document and not LOCATOR.search(entry.locator):
            found.append(f"uncertain names a document without a locator: {entry.locator!r}")
    return found


def prior_problems(prior: Provenance | None, value: Any) -> list[str]:
    """What is wrong with a ``prior`` (empty when absent or complete)."""
    if prior is None:
        return []
    found = reference_problems(prior)
    low, high = prior.bounds
    if not low < high:
        found.append(f"needs bounds [low, high] with low < high: {prior.bounds}")
    elif _is_number(value) and not low <= float(value) <= high:
        found.append(f"the shipped {value} lies outside its bounds {prior.bounds}")
    return found


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
        elif entry.kind == "setting" and len(entry.text) < MIN_FIGURE:
            found.append(f"{arch}: {path}: setting text too short to say why this default: {entry.text!r}")
        elif entry.kind in ("source", "uncertain"):
            found += [f"{arch}: {path}: {problem}" for problem in reference_problems(entry)]
            found += [f"{arch}: {path}: prior: {problem}" for problem in prior_problems(entry.prior, value)]
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


ARCHS = sorted(p.stem for p in CONF_HARDWARE.glob("*.yaml"))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_hardware_constant_has_a_provenance(arch):
    from dabench.fit.points import load_points

    assert problems(arch, {p.id for p in load_points()}) == []


def test_the_checker_catches_a_missing_and_an_orphan_entry(tmp_path, monkeypatch):
    (tmp_path / "sources").mkdir()
    (tmp_path / "x.yaml").write_text("peak_flops: {fp16: 1.0e12}\noptions: {k: 2, m: 1, f: 0.5}\n")
    (tmp_path / "sources" / "x.yaml").write_text(
        "options.f: {fitted: {points: [P2], bounds: [0, 1]}}\noptions.z: {setting: 'long enough text'}\n"
        "options.m: {source: {document: a, locator: b, figure: c}, setting: 'b'}\n"
    )
    monkeypatch.setattr(sources, "CONF_HARDWARE", tmp_path)
    declared = {"options.k": Provenance("options.k", bounds=(3.0, 4.0), points=("P1",))}
    monkeypatch.setattr(sources, "fitted", lambda arch: declared)  # knob k's declaration: knob(prior=...)
    found = "\n".join(problems("x", {"P2"}))
    assert "peak_flops.fp16" in found and "no entry" in found
    assert "options.z" in found and "does not have" in found
    assert "outside its fitting bounds" in found and "unknown calibration points ['P1']" in found
    assert "options.m: needs exactly one of" in found
    # a fit's prior is declared with its knob only: a sources YAML's fitted entry is refused
    assert "options.f: needs exactly one of ('source', 'uncertain', 'setting'), has ['fitted']" in found


@pytest.mark.parametrize("arch", ARCHS)
def test_a_fitted_knob_has_its_prior_in_its_declaration_only(arch):
    """No sources YAML holds a ``fitted:`` entry, and every constant the published set records as
    fitted has its prior (bounds, points) in its knob's declaration (``knob(prior=...)``)."""
    raw = fresh_file(CONF_HARDWARE / "sources" / f"{arch}.yaml")
    assert [path for path, entry in raw.items() if "fitted" in (entry or {})] == []
    published = ((load().get("platforms") or {}).get(arch) or {}).get("constants") or {}
    assert {path for path, c in published.items() if c["kind"] == "fitted"} == set(fitted(arch))
    assert all(e.kind == "fitted" and e.bounds and e.points for e in fitted(arch).values())


def _one(tmp_path, monkeypatch, entry: str) -> str:
    (tmp_path / "sources").mkdir(exist_ok=True)
    (tmp_path / "x.yaml").write_text("peak_flops: {fp16: 1.0e12}\n")
    (tmp_path / "sources" / "x.yaml").write_text(f"peak_flops.fp16: {entry}\n")
    monkeypatch.setattr(sources, "CONF_HARDWARE", tmp_path)
    return "\n".join(problems("x"))


def test_a_source_names_a_document_a_locator_and_the_figure(tmp_path, monkeypatch):
    good = (
        "{source: {document: 'Vendor X datasheet', locator: 'specifications table', figure: '1 TFLOP/s FP16 per chip'}}"
    )
    assert _one(tmp_path, monkeypatch, good) == ""
    assert "must be a mapping" in _one(tmp_path, monkeypatch, "{source: 'Vendor X datasheet says 1 TFLOP/s'}")
    found = _one(tmp_path, monkeypatch, "{source: {document: 'datasheet', locator: 'somewhere', figure: '1'}}")
    assert "document title" in found and "locator" in found and "figure" in found
    url = "{source: {document: 'Some paper (2024)', locator: 'https://example.org/p', figure: '1 TFLOP/s peak'}}"
    assert _one(tmp_path, monkeypatch, url) == ""


def test_a_prior_names_its_document_and_holds_the_value(tmp_path, monkeypatch):
    base = "{source: {document: 'Vendor X datasheet', locator: 'specifications table', figure: '1 TFLOP/s FP16'"
    ok = ", prior: {bounds: [1.0e11, 1.0e13], document: 'Vendor Y brief', locator: 'table 2', figure: '10 TFLOP/s max'}"
    assert _one(tmp_path, monkeypatch, base + ok + "}}") == ""
    outside = ok.replace("1.0e11, 1.0e13", "2.0e12, 1.0e13")
    assert "outside its bounds" in _one(tmp_path, monkeypatch, base + outside + "}}")
    bare = ", prior: {bounds: [1.0e11, 1.0e13], document: 'Y', locator: 'there', figure: ''}"
    found = _one(tmp_path, monkeypatch, base + bare + "}}")
    assert "prior: source needs a document title" in found and "prior: source needs a locator" in found


def test_uncertain_needs_a_stated_reason(tmp_path, monkeypatch):
    assert "stated reason" in _one(tmp_path, monkeypatch, "{uncertain: {reason: 'guess', estimate: 'about 1 TFLOP/s'}}")
    assert "must be a mapping" in _one(tmp_path, monkeypatch, "{uncertain: 'no vendor figure, about 1 TFLOP/s'}")
    ok = "{uncertain: {reason: 'the vendor publishes no figure for it', estimate: 'about 1 TFLOP/s'}}"
    assert _one(tmp_path, monkeypatch, ok) == ""


@pytest.mark.parametrize("arch", ARCHS)
def test_every_reference_has_the_form(arch):
    """Each ``source`` and ``uncertain`` entry, one by one (the form the convention asks)."""
    for path, entry in load_sources(arch).items():
        assert entry.kind in ("source", "uncertain", "fitted", "setting"), (arch, path, entry.text)
        if entry.kind == "source":
            assert len(entry.document.split()) >= 2 and LOCATOR.search(entry.locator) and entry.text, (arch, path)
        if entry.kind == "uncertain":
            assert len(entry.reason) >= 20 and entry.text, (arch, path)
