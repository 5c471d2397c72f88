"""Calibration against public measurements (dabench/fit): every point within
its tolerance, the shipped constants are the fit's output, the residuals file is current (the docs
tables: tests/cli/test_docs.py), and every predicted run can name its model version and error band."""

import math

import pytest

from dabench.cli.fit.published import platforms
from dabench.fit.evaluate import predict_point
from dabench.fit.points import load_points, uncertain_tolerance
from dabench.fit.sources import fitted, hardware_yaml
from dabench.perfmodel.constants import error_band, model_version, residuals, run_tags

POINTS = [p for p in load_points() if p.use != "excluded"]


@pytest.fixture(scope="module")
def predicted():
    return {p.id: predict_point(p) for p in load_points()}


def test_points_have_a_source_and_a_stated_tolerance():
    """Throughput within 25%, allocation within 5 points; wider only with ``uncertain: <reason>``
    (20+ characters) in the note, and then listed in docs/perfmodel.md's generated table."""
    for point in load_points():
        assert point.source and point.type in "MVD"
        assert uncertain_tolerance(point) != "NO STATED REASON", point.id
        if point.use == "excluded":
            assert "excluded" in point.note, point.id


def test_the_tolerance_escape_needs_a_stated_reason():
    from dataclasses import replace

    point = next(p for p in load_points() if p.metric == "samples_per_s")
    assert uncertain_tolerance(replace(point, tolerance=0.4, note="uncertain")) == "NO STATED REASON"
    reason = "the log prints two rates and the source does not say which"
    assert uncertain_tolerance(replace(point, tolerance=0.4, note=f"x; uncertain: {reason}")) == reason
    assert uncertain_tolerance(replace(point, tolerance=0.25, note="uncertain")) == ""


@pytest.mark.parametrize("point", POINTS, ids=[p.id for p in POINTS])
def test_every_calibration_point_is_within_tolerance(point, predicted):
    value = predicted[point.id]
    assert not math.isnan(value), f"{point.id}: the model refuses a configuration that ran"
    assert abs(point.error(value)) <= point.tolerance, (
        f"{point.id}: predicted {value:.4g}, published {point.published:.4g}"
    )


def test_residuals_file_matches_the_shipped_model(predicted):
    """residuals.json (error bands) is what `python -m dabench fit --write` computes now."""
    stored = residuals()
    for arch in platforms():
        assert arch in stored, f"run python -m dabench fit --arch {arch} --write"
        for point in (p for p in load_points() if p.platform == arch):
            row = stored[arch][point.id]
            value = predicted[point.id]
            if math.isnan(value):
                assert row["predicted"] is None
            else:
                assert row["predicted"] == pytest.approx(value, rel=1e-5), point.id


@pytest.mark.parametrize("arch", sorted({a for a in platforms() if fitted(a)}))
def test_shipped_constants_are_the_fit(arch):
    """Refitting from the shipped values moves nothing beyond the YAML's rounding (bounded,
    deterministic least squares), so the YAML holds the fit's output."""
    from dabench.fit.refit import refit

    result = refit(arch)
    options = hardware_yaml(arch)["options"]
    for name, value in result.values.items():
        assert value == pytest.approx(float(options[name]), rel=0.02, abs=1e-9), name


def test_model_version_and_error_band():
    version = model_version("wse2")
    assert len(version) == 12 and int(version, 16) >= 0
    assert version != model_version("ipu")
    lo, hi = error_band("wse2")
    widest = max(p.tolerance for p in load_points() if p.platform == "wse2" and p.metric == "samples_per_s")
    assert -widest <= lo <= hi <= widest
    tags = run_tags("wse2")
    assert tags["dabench.model_version"] == version and "," in tags["dabench.error_band"]
    assert tags["dabench.constants"] == "published" and tags["dabench.band.nominal_coverage"] == "0.8"
    assert run_tags("no_such_arch")["dabench.error_band"] == "uncalibrated"
    assert run_tags("no_such_arch")["dabench.band"].startswith("uncalibrated")


def test_model_version_ignores_prose_and_follows_code(tmp_path):
    """Docstrings, comments, layout and YAML comments leave the version alone; code and values move it."""
    from dabench.perfmodel.constants import _meaning

    def meaning(name: str, text: str) -> bytes:
        (tmp_path / name).write_text(text)
        return _meaning(tmp_path / name)

    code = "def f(x):\n    return 2 * x\n"
    prose = '"""A model."""\n\n\ndef f(x):  # doubles\n    """Twice x."""\n    # the factor\n    return 2 * x\n'
    assert meaning("a.py", code) == meaning("b.py", prose) != meaning("c.py", code.replace("2", "3"))
    yaml_prose = meaning("b.yaml", "# preset\na: 1\n")
    assert meaning("a.yaml", "a: 1  # sourced\n") == yaml_prose != meaning("c.yaml", "a: 2\n")


def test_published_set_was_sized_on_this_model():
    """published.json records every platform's current model version (a change of model code
    without python -m dabench fit --cv --write leaves it stale)."""
    from dabench.perfmodel.constants import load

    for arch, entry in load()["platforms"].items():
        assert entry["model_hash"] == model_version(arch), arch


def test_check_mode_passes_on_the_shipped_constants(capsys):
    from dabench.cli.fit import main

    assert main(["--check", "--arch", "wse2"]) == 0
    assert "0 point(s) out of tolerance" in capsys.readouterr().out


def test_a_predicted_run_records_model_version_and_error_band():
    """Every predicted run (ok or refused) carries the tags, so versions are never mixed unknowingly."""
    from dabench.api import predict

    for overrides in (
        ["hardware=wse2", "model=gpt2_small"],
        ["hardware=wse2", "model=gpt2_small", "model.n_layers=96"],
    ):
        result = predict(overrides)
        assert result.notes["dabench.model_version"] == model_version("wse2")
        assert result.notes["dabench.error_band"] == run_tags("wse2")["dabench.error_band"]
