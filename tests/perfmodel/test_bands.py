"""Out-of-sample error and bands (docs/perfmodel.md, "Out-of-sample error and bands"): the shipped
constant set has the documented form and is the shipped model's, every predicted run carries its
band and tags, an uncalibrated platform says so, and the conformal arithmetic is right."""

import math

import pytest

from dabench.perfmodel.fit import constant_set
from dabench.perfmodel.fit.cv import (
    NOMINAL,
    band_q,
    clopper_pearson,
    conformal_q,
    conformal_rank,
    nested_coverage,
    score,
)

PUBLISHED = constant_set.load()


def test_the_published_constant_set_has_the_documented_form():
    assert PUBLISHED, "run python -m dabench fit --cv --write"
    assert constant_set.format_problems(PUBLISHED) == []
    assert PUBLISHED["name"] == "published" and PUBLISHED["nominal_coverage"] == NOMINAL
    for arch in ("cpu", "cuda_a100"):  # no calibration points of their own: no band, and the set says so
        assert PUBLISHED["platforms"][arch]["band"]["kind"] == "uncalibrated"
    assert PUBLISHED["platforms"]["cuda"]["band"]["kind"] == "conformal"  # the MEG-* points (issue 20 item C)


def test_no_platform_has_as_many_fitted_constants_as_points():
    for arch, entry in PUBLISHED["platforms"].items():
        if entry["fitted_constants"]:
            assert entry["fitted_constants"] < entry["calibration_points"], arch
            assert entry["fitted_constants"] < entry["throughput_points"], arch


def test_the_published_set_holds_the_shipped_constants_and_predictions():
    """Its constants are the YAML's and its in-sample predictions today's (else: fit --cv --write)."""
    from dabench.perfmodel.fit.evaluate import predict_point
    from dabench.perfmodel.fit.points import load_points
    from dabench.perfmodel.fit.sources import constant_paths, hardware_yaml

    points = {p.id: p for p in load_points()}
    for arch, entry in PUBLISHED["platforms"].items():
        shipped = dict(constant_paths(hardware_yaml(arch)))
        assert {k: c["value"] for k, c in entry["constants"].items()} == shipped, arch
        for row in entry.get("residuals") or ():
            assert row["in_sample"] == pytest.approx(predict_point(points[row["point"]]), rel=1e-5), row["point"]


def test_the_pooled_coverage_interval_contains_the_nominal_level():
    cv = PUBLISHED["cv"]
    lo, hi = cv["binomial_95"]
    assert lo <= PUBLISHED["nominal_coverage"] <= hi
    assert cv["points"] == sum(e["throughput_points"] for e in PUBLISHED["platforms"].values())


def test_band_is_pure_and_symmetric_in_log_space():
    fake = {"platforms": {"x": {"band": {"kind": "conformal", "factor": 1.25}}}}
    assert constant_set.band("x", 100.0, fake) == pytest.approx((80.0, 125.0))
    assert constant_set.band("y", 100.0, fake) is None  # no entry: uncalibrated
    assert constant_set.band("x", float("nan"), fake) is None
    metrics = {"throughput.samples_per_s": 10.0, "step_time.median_s": 2.0}
    out = constant_set.band_metrics("x", metrics, fake)
    assert out["throughput.samples_per_s.lo"] == pytest.approx(8.0) and out["step_time.median_s.hi"] == pytest.approx(
        2.5
    )
    validate = {**metrics, "predict.throughput.samples_per_s": 12.0, "predict.step_time.median_s": 1.5}
    out = constant_set.band_metrics("x", validate, fake)  # validate: only the predicted numbers get one
    assert set(out) == {
        "predict.throughput.samples_per_s.lo",
        "predict.throughput.samples_per_s.hi",
        "predict.step_time.median_s.lo",
        "predict.step_time.median_s.hi",
    }


def test_conformal_arithmetic():
    assert conformal_rank(15) == 13 and conformal_rank(3) == 4 and conformal_rank(4) == 4
    assert conformal_q([0.3, 0.1, 0.2]) is None  # too few for 80%
    assert conformal_q([0.4, 0.1, 0.3, 0.2]) == 0.4
    assert band_q([0.1, 0.2], [0.5, 0.9]) == ("wide", 0.9)
    assert score(float("nan"), 1.0) == math.inf and score(2.0, 1.0) == pytest.approx(math.log(2))
    lo, hi = clopper_pearson(8, 10)
    assert 0.44 < lo < 0.45 and 0.97 < hi < 0.98


def test_nested_coverage_sizes_each_band_without_its_point():
    from dabench.perfmodel.fit.cv import CvRow, PlatformCv
    from dabench.perfmodel.fit.points import load_points

    point = next(p for p in load_points() if p.metric == "samples_per_s")
    rows = [CvRow(point, 1.0, point.published * math.exp(e), False) for e in (0.01, 0.02, 0.03, 0.04, 0.5)]
    cv = PlatformCv("x", rows, [], 5)
    cv.nested = {point.id: [0.01, 0.02, 0.03, 0.04]}  # the same id for all: each sees the same others
    coverage = nested_coverage([cv])
    assert coverage.n == 1  # one id
    assert coverage.per_point[point.id] is False  # its own score (0.5) is above the others' 4th smallest


@pytest.mark.parametrize(
    "overrides,banded",
    [
        (["hardware=wse2", "model=gpt2_small"], True),
        (["hardware=rdu"], True),
        (["hardware=cuda", "hardware.mode=predict"], True),
        (["hardware=cuda_a100", "hardware.mode=predict"], True),  # arch cuda: cuda's band
        (["hardware=cpu", "hardware.mode=predict"], False),
    ],
)
def test_a_predicted_run_carries_its_band_and_tags(overrides, banded):
    from dabench.api import predict

    result = predict(overrides)
    assert result.notes["dabench.constants"] == "published"
    metrics = result.metrics
    if banded:
        value = metrics["throughput.samples_per_s"]
        assert metrics["throughput.samples_per_s.lo"] < value < metrics["throughput.samples_per_s.hi"]
        assert metrics["step_time.median_s.lo"] < metrics["step_time.median_s"] < metrics["step_time.median_s.hi"]
        assert result.notes["dabench.band.nominal_coverage"] == "0.8"
    else:
        assert result.notes["dabench.band"] == "uncalibrated: no calibration points"
        assert not any(k.endswith((".lo", ".hi")) for k in metrics)
