"""Every number in conf/hardware/*.yaml is sourced (a document and a locator in it), an
``uncertain`` estimate with its stated reason, fitted (with its calibration points and bounds) or,
for options, a stated setting: conf/hardware/sources/<arch>.yaml, convention in
dabench/fit/sources.py."""

import pytest

from dabench.fit.sources import CONF_HARDWARE, problems

ARCHS = sorted(p.stem for p in CONF_HARDWARE.glob("*.yaml"))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_hardware_constant_has_a_provenance(arch):
    from dabench.fit.points import load_points

    assert problems(arch, {p.id for p in load_points()}) == []


def test_the_checker_catches_a_missing_and_an_orphan_entry(tmp_path, monkeypatch):
    import dabench.fit.sources as sources

    (tmp_path / "sources").mkdir()
    (tmp_path / "x.yaml").write_text("peak_flops: {fp16: 1.0e12}\noptions: {k: 2, m: 1}\n")
    (tmp_path / "sources" / "x.yaml").write_text(
        "options.k: {fitted: {points: [P1], bounds: [3, 4]}}\noptions.z: {setting: 'long enough text'}\n"
        "options.m: {source: {document: a, locator: b, figure: c}, setting: 'b'}\n"
    )
    monkeypatch.setattr(sources, "CONF_HARDWARE", tmp_path)
    found = "\n".join(problems("x", {"P2"}))
    assert "peak_flops.fp16" in found and "no entry" in found
    assert "options.z" in found and "does not have" in found
    assert "outside its fitting bounds" in found and "unknown calibration points ['P1']" in found
    assert "exactly one of" in found


def _one(tmp_path, monkeypatch, entry: str) -> str:
    import dabench.fit.sources as sources

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


def test_uncertain_needs_a_stated_reason(tmp_path, monkeypatch):
    assert "stated reason" in _one(tmp_path, monkeypatch, "{uncertain: {reason: 'guess', estimate: 'about 1 TFLOP/s'}}")
    assert "must be a mapping" in _one(tmp_path, monkeypatch, "{uncertain: 'no vendor figure, about 1 TFLOP/s'}")
    ok = "{uncertain: {reason: 'the vendor publishes no figure for it', estimate: 'about 1 TFLOP/s'}}"
    assert _one(tmp_path, monkeypatch, ok) == ""


@pytest.mark.parametrize("arch", ARCHS)
def test_every_reference_has_the_form(arch):
    """Each ``source`` and ``uncertain`` entry, one by one (the form the convention asks)."""
    from dabench.fit.sources import LOCATOR, load_sources

    for path, entry in load_sources(arch).items():
        assert entry.kind in ("source", "uncertain", "fitted", "setting"), (arch, path, entry.text)
        if entry.kind == "source":
            assert len(entry.document.split()) >= 2 and LOCATOR.search(entry.locator) and entry.text, (arch, path)
        if entry.kind == "uncertain":
            assert len(entry.reason) >= 20 and entry.text, (arch, path)
