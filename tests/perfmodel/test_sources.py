"""Every number in conf/hardware/*.yaml is sourced, fitted (with its calibration points and
bounds) or, for options, a stated setting: conf/hardware/sources/<arch>.yaml, convention in
dabench/perfmodel/fit/sources.py."""

import pytest

from dabench.perfmodel.fit.sources import CONF_HARDWARE, problems

ARCHS = sorted(p.stem for p in CONF_HARDWARE.glob("*.yaml"))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_hardware_constant_has_a_provenance(arch):
    from dabench.perfmodel.fit.points import load_points

    assert problems(arch, {p.id for p in load_points()}) == []


def test_the_checker_catches_a_missing_and_an_orphan_entry(tmp_path, monkeypatch):
    import dabench.perfmodel.fit.sources as sources

    (tmp_path / "sources").mkdir()
    (tmp_path / "x.yaml").write_text("peak_flops: {fp16: 1.0e12}\noptions: {k: 2, m: 1}\n")
    (tmp_path / "sources" / "x.yaml").write_text(
        "options.k: {fitted: {points: [P1], bounds: [3, 4]}}\noptions.z: {setting: 'long enough text'}\n"
        "options.m: {source: 'a', setting: 'b'}\n")
    monkeypatch.setattr(sources, "CONF_HARDWARE", tmp_path)
    found = "\n".join(problems("x", {"P2"}))
    assert "peak_flops.fp16" in found and "no entry" in found
    assert "options.z" in found and "does not have" in found
    assert "outside its fitting bounds" in found and "unknown calibration points ['P1']" in found
    assert "exactly one of" in found
