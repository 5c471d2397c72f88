"""The number guard (dabench/core/numbers.py) and its readers: a value that is not a real number,
not finite, as large as a stored infinity or outside its field's range is refused, and a run
carrying one never becomes a fit point nor a report figure."""

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dabench.core.numbers import LIMIT, RANGES, bad_metrics, bad_number, field_range
from dabench.fit.runs import DAMAGED, points_from_runs
from dabench.report.frame import normalize

STORED_INF = 1.7976931348623157e308  # what MLflow's SQL store keeps for inf
NAMES = st.one_of(
    st.sampled_from(sorted(RANGES)).map(lambda p: p + "x" if p.endswith(".") else p),
    st.sampled_from(["tier1.load_imbalance", "measure.contention", "loss.final"]),
)
NOT_FINITE = st.sampled_from([math.inf, -math.inf, math.nan, STORED_INF, -STORED_INF, "inf", "nan", "1e999"])


def out_of_range(name: str):
    low, high, open_low = field_range(name)
    below = st.floats(max_value=low, exclude_max=not open_low, allow_nan=False, allow_infinity=False)
    above = st.floats(min_value=high, exclude_min=True, allow_nan=False, allow_infinity=False)
    return st.one_of(below.filter(lambda v: v > -LIMIT * 10), above)


def in_range(name: str):
    low, high, open_low = field_range(name)
    return st.floats(min_value=low, max_value=high, exclude_min=open_low or low <= -LIMIT, exclude_max=high >= LIMIT)


WRONG_TYPE = st.sampled_from([True, "x", [1.0]])
BAD = NAMES.flatmap(lambda n: st.tuples(st.just(n), st.one_of(NOT_FINITE, out_of_range(n), WRONG_TYPE)))
GOOD = NAMES.flatmap(lambda n: st.tuples(st.just(n), in_range(n)))


@given(BAD)
def test_a_bad_number_is_named_with_its_field(item):
    name, value = item
    assert bad_number(name, value).startswith(f"{name}=")
    assert bad_metrics({"fine": 1.0, name: value}).startswith(f"{name}=")


@given(GOOD)
def test_a_number_in_its_range_passes(item):
    name, value = item
    assert bad_number(name, value) == "" and bad_metrics({name: value, "absent": None}) == ""


def _run(metrics):
    return {
        "run_id": "r" * 32,
        "tags": {"dabench.mode": "measure", "dabench.arch": "cpu", "dabench.status": "ok"},
        "params": {"hardware.name": "cpu", "model.n_layers": "2"},
        "metrics": {"throughput.samples_per_s": 10.0, "step_time.median_s": 0.1, **metrics},
    }


@settings(max_examples=80, deadline=None)
@given(BAD)
def test_a_run_with_a_bad_stored_metric_is_left_out_never_fitted(item):
    name, value = item
    points, left = points_from_runs([_run({name: value}), {**_run({}), "run_id": "g" * 32}])
    assert [p.run_id for p in points] == ["g" * 32]
    assert len(left) == 1 and left[0].reason.startswith(DAMAGED) and name in left[0].reason


@settings(max_examples=60, deadline=None)
@given(st.one_of(NOT_FINITE, out_of_range("throughput.samples_per_s")))
def test_a_report_shows_no_figure_for_a_bad_stored_metric(value):
    frame = normalize(pd.DataFrame([{"run_id": "r", "metrics.throughput.samples_per_s": value}]))
    assert math.isnan(frame["throughput"][0])
