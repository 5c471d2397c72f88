"""Out-of-source error and bands (docs/perfmodel.md, "Out-of-sample error and bands"): the shipped
constant set has the documented form and is the shipped model's, every platform's source-level
coverage interval holds the nominal, a band widens with reach and is never absent, every
predicted run carries its band, and a validate run is judged against it."""

import json
import math

import pytest

from dabench.core.status import Status
from dabench.fit.cv import (
    NOMINAL,
    CvRow,
    PlatformCv,
    band_q,
    clopper_pearson,
    needs,
    nested_bands,
    score,
)
from dabench.host import validation
from dabench.perfmodel import constants, reach
from tests.fit.helpers import format_problems

PUBLISHED = constants.load()
CALIBRATED = ("wse2", "rdu", "ipu", "cuda")


def test_the_published_constant_set_has_the_documented_form():
    assert PUBLISHED, "run python -m dabench fit --cv --write"
    assert format_problems(PUBLISHED) == []
    assert PUBLISHED["name"] == "published" and PUBLISHED["nominal_coverage"] == NOMINAL
    for arch in ("cpu", "cuda_a100"):  # no calibration points of their own: a wide band that says so
        band = PUBLISHED["platforms"][arch]["band"]
        assert band["kind"] == "wide" and band["factor"] > 2 and "nothing calibrated" in band["note"]
    for arch in CALIBRATED:
        entry = PUBLISHED["platforms"][arch]
        assert entry["band"]["kind"] == "near"
        assert len(entry["band"]["points"]) == entry["throughput_points"] > 0


def test_no_platform_has_as_many_fitted_constants_as_points():
    for arch, entry in PUBLISHED["platforms"].items():
        if entry["fitted_constants"]:
            assert entry["fitted_constants"] < entry["calibration_points"], arch
            assert entry["fitted_constants"] < entry["throughput_points"], arch


def test_the_published_set_holds_the_shipped_constants_and_predictions():
    """Its constants are the YAML's and its in-sample predictions today's (else: fit --cv --write)."""
    from dabench.fit.evaluate import predict_point
    from dabench.fit.points import load_points
    from dabench.fit.sources import constant_paths, hardware_yaml

    points = {p.id: p for p in load_points()}
    for arch, entry in PUBLISHED["platforms"].items():
        shipped = dict(constant_paths(hardware_yaml(arch)))
        assert {k: c["value"] for k, c in entry["constants"].items()} == shipped, arch
        for row in entry.get("residuals") or ():
            expected = predict_point(points[row["point"]])
            if math.isnan(expected):
                assert row["in_sample"] is None, row["point"]
            else:
                assert row["in_sample"] == pytest.approx(expected, rel=1e-5), row["point"]


def test_every_platforms_source_level_coverage_interval_contains_the_nominal_level():
    cv, nominal = PUBLISHED["cv"], PUBLISHED["nominal_coverage"]
    assert cv["binomial_95"][0] <= nominal <= cv["binomial_95"][1]
    assert cv["sources"] >= 12
    assert cv["points"] == sum(e["calibration_points"] for e in PUBLISHED["platforms"].values())
    for arch in CALIBRATED:
        lo, hi = PUBLISHED["platforms"][arch]["summary"]["binomial_95"]
        assert lo <= nominal <= hi, arch
    lowest = min(
        e["summary"]["covered"] / e["summary"]["banded"]
        for e in PUBLISHED["platforms"].values()
        if (e.get("summary") or {}).get("banded", 0) >= 10
    )
    assert cv["coverage_min_platform"] == pytest.approx(lowest, abs=1e-6)


def _fake_set(points):
    return {
        "nominal_coverage": 0.8,
        "bands": {"wide": 1.0, "needs": [0.0] * 8},
        "platforms": {
            "x": {"band": {"kind": "near", "points": points}},
            "empty": {"band": {"kind": "wide", "points": []}},
        },
    }


def _coords(size=9.0, chips=0.0, precision="mixed", **extra):
    return {
        "size": size,
        "chips": chips,
        "precision": precision,
        "compile": "",
        "execution": "",
        "release": "",
        "generation": "",
        **extra,
    }


def test_a_band_widens_with_reach_and_is_never_absent():
    points = [{"id": f"p{i}", "coords": _coords(size=9.0 + i / 10), "score": 0.05 + i / 100} for i in range(5)]
    fake = _fake_set(points)
    at = constants.band("x", 100.0, fake, _coords(9.0))
    other_precision = constants.band("x", 100.0, fake, _coords(9.0, precision="fp32"))
    bigger = constants.band("x", 100.0, fake, _coords(10.4))
    assert at[0] < 100.0 < at[1]
    assert other_precision[1] > at[1] and bigger[1] > at[1]
    kind, q, why = constants.half_width("x", fake, _coords(14.0))  # five decades away: nothing nearby
    assert kind == "wide" and "nothing calibrated nearby" in why and q > 1.0
    kind, q, why = constants.half_width("empty", fake, _coords())
    assert kind == "wide" and q == pytest.approx(1.0 + reach.GROWTH_MIN * reach.FAR)
    assert constants.band("empty", 100.0, fake, _coords()) is not None
    assert constants.band("x", float("nan"), fake, _coords()) is None


def test_the_band_nominal_param_sizes_the_band():
    points = [
        {"id": f"p{i}", "coords": _coords(), "score": s}
        for i, s in enumerate((0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2))
    ]
    fake = _fake_set(points)
    narrow = constants.band("x", 100.0, fake, _coords(), nominal=0.5)
    wide = constants.band("x", 100.0, fake, _coords(), nominal=0.9)
    assert wide[1] > narrow[1] and wide[0] < narrow[0]


def test_a_band_is_at_least_the_nearest_points_own_error():
    points = [{"id": "good", "coords": _coords(9.0), "score": 0.05} for _ in range(9)]
    points.append({"id": "bad", "coords": _coords(9.0, chips=5.0), "score": 0.7})  # the multi-node run it missed
    fake = _fake_set(points)
    near_bad = constants.half_width("x", fake, _coords(9.0, chips=5.0))[1]
    near_good = constants.half_width("x", fake, _coords(9.0))[1]
    assert near_bad >= 0.7 > near_good


def test_band_metrics_of_a_validate_run_band_only_the_predicted_numbers():
    fake = {"platforms": {"x": {"band": {"kind": "conformal", "factor": 1.25}}}}
    metrics = {"throughput.samples_per_s": 10.0, "step_time.median_s": 2.0}
    out = constants.band_metrics("x", metrics, fake)
    assert out["throughput.samples_per_s.lo"] == pytest.approx(8.0)
    assert out["step_time.median_s.hi"] == pytest.approx(2.5)
    validate = {**metrics, "predict.throughput.samples_per_s": 12.0, "predict.step_time.median_s": 1.5}
    assert set(constants.band_metrics("x", validate, fake)) == {
        "predict.throughput.samples_per_s.lo",
        "predict.throughput.samples_per_s.hi",
        "predict.step_time.median_s.lo",
        "predict.step_time.median_s.hi",
    }


def test_conformal_arithmetic():
    rank = reach.conformal_rank
    assert rank(15, NOMINAL) == 13 and rank(3, NOMINAL) == 4 and rank(4, NOMINAL) == 4
    assert reach.conformal_q([0.3, 0.1, 0.2], NOMINAL) is None  # too few for 80%
    assert reach.conformal_q([0.4, 0.1, 0.3, 0.2], NOMINAL) == 0.4
    assert band_q([0.1, 0.2], [0.5, 0.9]) == ("wide", 0.9)
    assert score(float("nan"), 1.0) == math.inf and score(2.0, 1.0) == pytest.approx(math.log(2))
    lo, hi = clopper_pearson(8, 10)
    assert 0.44 < lo < 0.45 and 0.97 < hi < 0.98
    assert reach.growth([0.0] * 10, 0.8) == reach.GROWTH_MIN
    assert reach.growth([0.0, 0.0, 0.3, 0.6], 0.5) == pytest.approx(0.3)


def test_a_nested_band_is_sized_without_its_own_source():
    from dataclasses import replace

    from dabench.fit.points import load_points

    base = next(p for p in load_points() if p.metric == "samples_per_s")
    rows = []
    for i, (source, err) in enumerate([("A", 0.9)] + [("B", 0.01 * k) for k in range(1, 10)]):
        point = replace(base, id=f"q{i}", document=f"document {source}", locator="table 1")
        rows.append(CvRow(point, 1.0, point.published * math.exp(err), True, _coords()))
    nested_bands([PlatformCv("x", rows)])
    assert rows[0].covered is False  # A's own 0.9 does not size its band: B's small errors do
    assert all(row.covered for row in rows[1:])  # B's bands include A's 0.9 (nearest, equal)


def test_an_error_closer_than_the_coordinates_resolve_sets_no_growth():
    """A point beside another (a vocabulary apart) that misses far gives no growth per unit: over
    that distance any growth would do, and every band further out would take it (was x/9e67)."""
    from dataclasses import replace

    from dabench.fit.points import load_points

    base = next(p for p in load_points() if p.metric == "samples_per_s")
    spots = [(9.0, 0.0, 0.01 * k) for k in range(1, 6)] + [(9.0005, 0.0, 1.2), (9.0, 1.0, 0.03)]
    rows = []
    for i, (size, chips, err) in enumerate(spots):
        point = replace(base, id=f"r{i}", document=f"document {i}", locator="table 1")
        rows.append(CvRow(point, 1.0, point.published * math.exp(err), True, _coords(size=size, chips=chips)))
    need = needs([PlatformCv("x", rows)])
    assert need == {"r6": 0.0}  # the others' nearest lies within reach.RESOLUTION: no evidence of growth
    far = replace(rows[6].point, id="r7", document="document 7")  # a chip doubling further, missing by 1.5
    rows_far = [*rows, CvRow(far, 1.0, far.published * math.exp(1.5), True, _coords(size=9.0, chips=2.0))]
    assert needs([PlatformCv("x", rows_far)])["r7"] > 0.0  # at a resolved distance a miss still sets growth
    assert reach.growth(list(need.values()), NOMINAL) == reach.GROWTH_MIN
    nested_bands([PlatformCv("x", rows)])
    assert rows[6].band < 1.3  # the base (the near miss's 1.2 among six) and the floor, not 2,300 per unit


@pytest.mark.parametrize(
    "overrides,kind",
    [
        (["hardware=wse2", "model=gpt2_small"], "near"),
        (["hardware=rdu", "precision=mixed", "hardware.options.compile_mode=o3", "model=gpt2_small"], "near"),
        (["hardware=cuda_a100", "hardware.mode=predict"], "wide"),  # arch cuda: a tiny model far from its points
    ],
)
def test_a_predicted_run_carries_its_band_and_tags(overrides, kind):
    from dabench.api import predict

    result = predict(overrides)
    assert result.notes["dabench.constants"] == "published"
    metrics = result.metrics
    value = metrics["throughput.samples_per_s"]
    assert metrics["throughput.samples_per_s.lo"] < value < metrics["throughput.samples_per_s.hi"]
    assert metrics["step_time.median_s.lo"] < metrics["step_time.median_s"] < metrics["step_time.median_s.hi"]
    assert result.notes["dabench.band"].startswith(kind + ":")
    assert result.notes["dabench.band.nominal_coverage"] == "0.8"
    wider = predict([*overrides, "band.nominal=0.95"]).metrics
    assert wider["throughput.samples_per_s.hi"] > metrics["throughput.samples_per_s.hi"]


def test_a_validate_run_is_judged_against_its_band():
    from dabench.core.result import RunResult
    from dabench.core.status import Status
    from dabench.pipeline.execute import within_band
    from dabench.tracking.describe import summary_line

    band = {"predict.throughput.samples_per_s": 100.0, "predict.throughput.samples_per_s.lo": 80.0}
    band["predict.throughput.samples_per_s.hi"] = 125.0
    assert within_band({**band, "throughput.samples_per_s": 110.0}) == {"predict.within_band": 1.0}
    assert within_band({**band, "throughput.samples_per_s": 3000.0}) == {"predict.within_band": 0.0}
    assert within_band({"throughput.samples_per_s": 3000.0}) == {}
    metrics = {
        **band,
        "throughput.samples_per_s": 3000.0,
        "throughput.tokens_per_s": 3e5,
        "step_time.median_s": 0.01,
        "predict.rel_error.samples_per_s": 100.0 / 3000.0 - 1,
        "predict.within_band": 0.0,
    }
    result = RunResult(Status.OK, "", "validate", metrics)
    line = summary_line(result, "run")
    assert "prediction error -96.7% (OUTSIDE its band [80-125])" in line
    metrics.update({"throughput.samples_per_s": 110.0, "predict.within_band": 1.0})
    assert "(inside its band [80-125])" in summary_line(result, "run")


def test_the_summary_line_of_a_prediction_shows_its_band():
    from dabench.core.result import RunResult
    from dabench.core.status import Status
    from dabench.tracking.describe import summary_line

    metrics = {
        "throughput.samples_per_s": 1472.0,
        "throughput.samples_per_s.lo": 1104.0,
        "throughput.samples_per_s.hi": 1977.0,
        "throughput.tokens_per_s": 3e5,
        "step_time.median_s": 0.01,
    }
    line = summary_line(RunResult(Status.OK, "", "predict", metrics), "run")
    assert "| 1,472.0 samples/s [1,100-1,980] PREDICTED |" in line
    for mode in ("measure", "validate"):  # a measurement's range is its own steps', never PREDICTED
        line = summary_line(RunResult(Status.OK, "", mode, metrics), "run")
        assert "| 1,472.0 samples/s [1,100-1,980] measured |" in line and "PREDICTED" not in line
    slow = {**metrics, "throughput.samples_per_s": 0.0123, "throughput.tokens_per_s": 3.21}
    slow.update({"throughput.samples_per_s.lo": 0.01, "throughput.samples_per_s.hi": 0.02})
    line = summary_line(RunResult(Status.OK, "", "predict", slow), "run")  # never 0.0 samples/s
    assert "| 0.0123 samples/s [0.01-0.02] PREDICTED | 3.21 tokens/s |" in line, line


def test_advise_says_when_two_platforms_bands_overlap():
    from dabench.advise.answer import overlaps

    ranked = [
        {"rank": 1, "platform": "rdu", "status": "ok", "time_lo_s": 10.0, "time_hi_s": 40.0},
        {"rank": 2, "platform": "cuda", "status": "ok", "time_lo_s": 30.0, "time_hi_s": 50.0},
        {"rank": 3, "platform": "wse2", "status": "ok", "time_lo_s": 60.0, "time_hi_s": 70.0},
        {"rank": 4, "platform": "ipu", "status": "none_fits"},
    ]
    lines = overlaps(ranked, "time")
    assert len(lines) == 1 and "#1 rdu and #2 cuda" in lines[0] and "not settled" in lines[0]
    assert overlaps(ranked[2:], "time") == []


def test_a_validate_run_records_whether_its_measurement_is_inside_the_band(tmp_path, monkeypatch):
    """A real measured-and-predicted CPU run (calibration repeats injected, as in
    tests/pipeline/test_noisy_ceilings.py): the CPU has no published calibration points and this
    machine no validate errors yet, so its band comes from the shipped CPU validation grid and says
    so; the run records predict.within_band against that band, and its error as this machine's."""
    from dabench.config.build import build_run_config
    from dabench.host import calibrate
    from dabench.pipeline.execute import execute
    from dabench.tracking.describe import _sig3, summary_line
    from tests.conftest import composed, fresh_calibration

    fresh_calibration(monkeypatch, tmp_path)
    monkeypatch.setattr(calibrate, "matmul_samples", lambda dtype, repeats=7: [1.0e12] * repeats)
    monkeypatch.setattr(calibrate, "copy_samples", lambda repeats=7: [1.0e11] * repeats)
    monkeypatch.setattr(calibrate, "load_per_core", lambda: 0.1)
    fast = ["model.n_layers=1", "run.warmup_steps=1", "run.timed_steps=2", "run.profile_subtasks=false"]
    result = execute(build_run_config(composed(["hardware.mode=validate", *fast])))
    m = result.metrics
    lo, hi = m["predict.throughput.samples_per_s.lo"], m["predict.throughput.samples_per_s.hi"]
    assert lo < m["predict.throughput.samples_per_s"] < hi
    assert m["predict.within_band"] == float(lo <= m["throughput.samples_per_s"] <= hi)
    assert validation.GRID in result.notes["dabench.band"]
    if "predict.rel_error.samples_per_s" in m:
        line = summary_line(result, "run")
        assert f"its band [{_sig3(lo)}-{_sig3(hi)}], from {validation.GRID})" in line, line
    rows = validation.points(constants.model_version("cpu"))  # an ok run is this machine's evidence
    expected = [abs(math.log1p(m["predict.rel_error.samples_per_s"]))] if result.status is Status.OK else []
    assert [r["score"] for r in rows] == pytest.approx(expected, abs=1e-6)


def test_a_cpu_band_comes_from_the_shipped_grid_until_this_machines_validate_errors_give_a_quantile(
    tmp_path, monkeypatch
):
    """The CPU is priced at this machine's calibration, so its band comes from this machine's own
    validate errors (dabench/host/validation.py) once they give an 80% quantile; before that (and
    for another model version's errors), from the CPU validation grid's errors shipped with dabench,
    one distance unit further when they were measured on another machine; without either, the
    wide band of a platform nothing is known about."""
    from dabench.config.build import build_run_config
    from dabench.core.result import RunResult
    from dabench.core.status import Status
    from dabench.tracking.describe import summary_line
    from tests.conftest import composed, fresh_calibration

    fresh_calibration(monkeypatch, tmp_path)
    monkeypatch.setattr(validation, "SHIPPED", tmp_path / "grid.json")
    x = reach.coords(build_run_config(composed(["hardware=cpu"])))
    version = constants.model_version("cpu")
    kind, wide, why = constants.half_width("cpu", PUBLISHED, x)
    assert kind == "wide" and "nothing calibrated" in why  # no grid shipped, no validate run here

    def ship(machine: str, scores: list[float]) -> None:
        points = [{"id": f"grid {i}", "coords": x, "score": s} for i, s in enumerate(scores)]
        grid = {"machine": machine, "model": version, "measured": "today", "points": points}
        validation.SHIPPED.write_text(json.dumps(grid))

    rate = reach.growth([math.inf if n is None else n for n in PUBLISHED["bands"]["needs"]], 0.8)
    ship("Another CPU|threads=64|torch=2.0", [0.02, 0.05, 0.08, 0.2])
    kind, q, why = constants.half_width("cpu", PUBLISHED, x)
    assert kind == "near" and q == pytest.approx(0.2 + rate) and "machine 1" in why  # one unit away
    assert f"from 4 errors of {validation.GRID} on Another CPU" in why
    ship(validation.machine(), [0.02, 0.05, 0.08, 0.2])  # measured on this kind of machine: no distance
    assert constants.half_width("cpu", PUBLISHED, x)[:2] == ("near", pytest.approx(0.2))
    for error in (0.05, 0.02, 0.08):
        validation.record(version, {"id": "here", "coords": x, "score": error})
    validation.record("another-model", {"id": "there", "coords": x, "score": 0.01})
    assert constants.half_width("cpu", PUBLISHED, x)[1] == pytest.approx(0.2)  # 3 errors: no 80% quantile yet
    validation.record(version, {"id": "here", "coords": x, "score": 0.1})
    kind, q, why = constants.half_width("cpu", PUBLISHED, x)
    assert kind == "near" and q == pytest.approx(0.1)  # the 4th smallest of 4 (rank ceil(0.8 x 5))
    assert f"from 4 errors of {validation.SOURCE}" in why
    assert constants.half_width("wse2", PUBLISHED, None)[2] == PUBLISHED["platforms"]["wse2"]["band"]["note"]
    far = {**x, "size": x["size"] + 1.0}  # a decade larger: wider
    assert constants.half_width("cpu", PUBLISHED, far)[1] > q
    lo, hi = constants.band("cpu", 100.0, PUBLISHED, x)
    assert (lo, hi) == pytest.approx((100.0 / math.exp(0.1), 100.0 * math.exp(0.1)))
    tags = constants.band_tags("cpu", version, PUBLISHED, x=x)
    metrics = {
        "throughput.samples_per_s": 105.0,
        "throughput.tokens_per_s": 1e4,
        "step_time.median_s": 0.1,
        "predict.rel_error.samples_per_s": -0.05,
        "predict.throughput.samples_per_s.lo": lo,
        "predict.throughput.samples_per_s.hi": hi,
        "predict.within_band": 1.0,
    }
    line = summary_line(RunResult(Status.OK, "", "validate", metrics, notes=tags), "run")
    assert f"(inside its band [90.5-111], from {validation.SOURCE})" in line
    validation.path().write_text("{not json")  # damaged: named in a warning, not used
    assert constants.half_width("cpu", PUBLISHED, x)[1] == pytest.approx(0.2)  # the grid's again
    for damaged in ("[]", '{"points": 5}', '{"points": [1, {"coords": {"size": 5, "chips": 0}, "score": "NaN"}]}'):
        validation.SHIPPED.write_text(damaged)  # a damaged grid too: nothing is known
        assert constants.half_width("cpu", PUBLISHED, x)[:2] == ("wide", wide), damaged


def test_the_shipped_cpu_validation_grid_is_usable_evidence():
    """The grid's errors (benchmarks/validate_cpu.py --ship) name their machine, model version and
    day, and cover the grid: at least 20 of its 27 points, each a finite score."""
    grid = json.loads(validation.SHIPPED.read_text())
    assert grid["machine"].count("|") == 2 and grid["model"] and grid["measured"] and "--ship" in grid["command"]
    assert len(grid["points"]) >= 20 and all(math.isfinite(p["score"]) and p["score"] >= 0 for p in grid["points"])
    points, record = validation.shipped()
    assert len(points) == len(grid["points"]) and record == grid
    assert {p["coords"]["machine"] for p in points} == {grid["machine"]}
