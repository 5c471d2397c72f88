"""Fit from your own runs (issue 21; docs/fitting.md): measured runs in MLflow -> points -> a named
constant set, used by ``hardware.constants=NAME|FILE``, shared with ``--export``, checked for drift.

The "measured" runs here are SYNTHETIC (tests/fit/helpers.py): the analytical model's predictions
with perturbed constants, times a small deterministic noise, written through dabench's run
lifecycle into a temp SQLite store. They stand in for measurements so that the tests know which
way a fit must move. The CUDA runs are RECORDED STAND-INS, not GPU measurements: the fixture
tests/fit/fixtures/cuda_runs.json was written by dabench's own measured-run recording code with
the device replaced by the H200 model (no GPU was available; on a machine with one,
``benchmarks/fit_from_runs.py --hardware cuda`` runs the same path for real).
"""

from __future__ import annotations

import json
import math

import pytest

from dabench.cli.fit.from_mlflow import report
from dabench.fit.constant_set import build_set
from dabench.fit.evaluate import prepare
from dabench.fit.machine import GroupFit, at_least, drift, fit_group, folds, noise_floor
from dabench.fit.runs import group_points, points_from_runs
from dabench.perfmodel import constants
from tests.fit import helpers as h

#: 6 configs, fp32 and bf16 (bf16 is emulated: the emulated-precision factors get fitted)
GRID = [
    (2, 128, 1, "fp32"),
    (8, 256, 4, "fp32"),
    (4, 128, 4, "fp32"),
    (2, 256, 4, "bf16"),
    (8, 128, 1, "bf16"),
    (4, 256, 1, "bf16"),
]


@pytest.fixture(scope="module")
def cpu_fit():
    """One fit of the synthetic CPU runs, shared by the tests below (a fit costs seconds)."""
    runs = h.cpu_runs(GRID)
    points, left = points_from_runs(runs)
    return runs, fit_group("cpu", h.CPU_HOST, points)


def test_points_keep_measured_ok_runs_and_say_why_others_are_left_out():
    runs = h.cpu_runs(GRID[:3])
    predicted = dict(runs[0], run_id="p" * 32, tags={**runs[0]["tags"], "dabench.mode": "predict"})
    failed = dict(
        runs[1],
        run_id="f" * 32,
        tags={**runs[1]["tags"], "dabench.status": "invalid_result", "dabench.reason": "throughput above the roof"},
    )
    other = dict(runs[2], run_id="o" * 32, tags={**runs[2]["tags"], "dabench.host_key": "cpu:Another CPU"})
    ingested = {
        "run_id": "i" * 32,
        "tags": {"dabench.mode": "measure", "dabench.status": "ok"},
        "params": {"import.format": "cerebras_compile_report", "import.path": "/x"},
        "metrics": {"throughput.samples_per_s": 5000.0},
    }
    points, left = points_from_runs(runs + [predicted, failed, other, ingested])
    ids = {p.run_id for p in points}
    assert "p" * 32 not in ids and "p" * 32 not in {x.run_id for x in left}  # predicted: never a point
    assert [x.reason for x in left if x.run_id == "f" * 32][0].startswith("the result check failed")
    groups = group_points(points)
    assert set(groups) == {("cpu", h.CPU_HOST), ("cpu", "cpu:Another CPU"), ("wse2", "wse2:cerebras_compile_report")}
    vendor = groups[("wse2", "wse2:cerebras_compile_report")]
    assert vendor[0].published == 5000.0 and "recorded without its config" in prepare(vendor)[1][0].reason
    assert points[0].config["model"]["n_layers"] == 2 and points[0].ceilings[0] == h.CPU_CEILINGS["fp32"][0]


def test_the_fit_lowers_the_out_of_sample_error_and_writes_the_documented_format(cpu_fit):
    runs, g = cpu_fit
    assert set(g.fitted) >= {"launch_s", "memory_efficiency", "emulated_compute_efficiency"}
    assert len(g.fitted) < len({p.key for p in g.points})  # fewer constants than configs
    assert g.fitted_error < 0.7 * g.published_error, report(g)
    assert g.recommendation == "fitted"
    assert abs(g.fitted["launch_s"] / h.CPU_TRUTH["launch_s"] - 1) < 0.5  # moved towards the truth
    data = build_set("mine", [g], {"kind": "mlflow", "store": "sqlite:///x", "run_ids": [r["run_id"] for r in runs]})
    assert h.format_problems(data) == []
    entry = data["platforms"]["cpu"]
    assert entry["band"]["kind"] == "conformal" and entry["band"]["factor"] > 1
    assert entry["host_key"] == h.CPU_HOST and entry["recommendation"] == "fitted"
    assert {r["point"] for r in entry["residuals"]} == {r["run_id"] for r in runs}
    fitted = {k: c for k, c in entry["constants"].items() if c["kind"] == "fitted"}
    assert fitted["options.launch_s"]["before"] == 9e-05 and fitted["options.launch_s"]["points"]
    text = report(g)
    assert "launch_s: 9e-05 ->" in text and "noise floor" in text and "recommendation: the fitted set" in text


def test_a_fit_that_does_not_help_keeps_the_shipped_constants(cpu_fit):
    _, g = cpu_fit
    worse = GroupFit(**{**g.__dict__, "out_of_sample": {k: v * 3 for k, v in g.out_of_sample.items()}})
    assert not worse.improved and worse.recommendation == "published"
    assert "does NOT lower the out-of-sample error" in report(worse)


def test_leave_one_config_out_keeps_repeats_together():
    runs = h.cpu_runs(GRID[:3] + GRID[:1])  # the first config measured twice
    points, _ = points_from_runs(runs)
    assert len(points) == 4 and len(folds(points)) == 3
    floor, how = noise_floor(points)
    assert how.startswith("repeats: 1 configs") and floor > 0


def test_the_cuda_path_fits_from_the_recorded_standin_fixture(tmp_path, monkeypatch, capsys):
    """RECORDED STAND-INS, NOT GPU MEASUREMENTS (tests/fit/fixtures/cuda_runs.json says so, and
    every run's dabench.source tag): runs that dabench's measured-run recording code wrote as
    hardware=cuda runs (pipeline.record.record_run, the device replaced by the H200 model with
    perturbed constants). Written into a temp store as record_run writes a run and fitted by
    ``fit --from-mlflow``: the path a real measured CUDA run takes from the store on."""
    data = json.loads((h.FIXTURES / "cuda_runs.json").read_text())
    assert data["standin"] is True and "NOT measurements" in data["note"]
    runs = data["runs"]
    assert {r["tags"]["dabench.source"] for r in runs} == {h.STANDIN_SOURCE}
    assert {(r["tags"]["dabench.mode"], r["tags"]["dabench.arch"], r["params"]["hardware.backend"]) for r in runs} == {
        ("measure", "cuda", "cuda")
    }
    points, left = points_from_runs(runs)
    assert not left and {p.host_key for p in points} == {h.CUDA_HOST}
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    h.record(uri, runs, "cuda_standin")
    monkeypatch.setenv("DABENCH_CONSTANTS_DIR", str(tmp_path / "sets"))
    code, out, _ = _fit_cli("--from-mlflow", "cuda_standin", "--tracking-uri", uri, "--name", "gpu", capsys=capsys)
    assert code == 0, out
    assert f"== cuda [{h.CUDA_HOST}]: 10 points used (10 configs)" in out and "recommendation: the fitted set" in out
    data = json.loads((tmp_path / "sets" / "gpu.json").read_text())
    assert h.format_problems(data) == [] and data["platforms"]["cuda"]["band"]["kind"] == "conformal"
    entry = data["platforms"]["cuda"]
    fitted = {k.split(".", 1)[1]: c["value"] for k, c in entry["constants"].items() if c.get("before") is not None}
    assert set(fitted) == {"compute_efficiency", "memory_efficiency", "launch_s"}
    assert abs(fitted["compute_efficiency"] / h.CUDA_TRUTH["compute_efficiency"] - 1) < 0.2, fitted
    comparison = entry["comparison"]
    assert comparison["fitted_out_of_sample_median_abs_error"] < 0.7 * comparison["base_median_abs_error"]


def test_the_cuda_fixture_is_what_the_measured_run_code_records_today(tmp_path):
    """The stand-in fixture stays faithful to dabench's recording code: one of its configs recorded
    again now carries the same params, tags and metrics (names; the config's values), so the
    fixture exercises exactly what a measured hardware=cuda run logs. A failure here means the
    recording changed: regenerate it (tests/fit/helpers.py: make_cuda_fixture)."""
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    fresh = h.read_runs(uri, h.record_standin_cuda_runs(uri, h.CUDA_GRID[:1]))[0]
    kept = h.load_fixture("cuda_runs.json")[0]
    assert set(fresh["tags"]) == set(kept["tags"]) and set(fresh["metrics"]) == set(kept["metrics"])
    assert set(fresh["params"]) == set(kept["params"])
    config = ("model.", "run.", "precision.", "parallel.", "hardware.name", "hardware.arch", "hardware.backend")
    same = {k: v for k, v in fresh["params"].items() if k.startswith(config)}
    assert same == {k: kept["params"][k] for k in same}


@pytest.fixture(scope="module")
def store(tmp_path_factory, cpu_fit):
    """One temp SQLite store (real MLflow, written through dabench's run lifecycle): experiment
    ``sweep`` holds 4 synthetic measured runs and a predicted one; ``later`` the same configs
    measured again 40% slower (injected out-of-band runs for the drift check)."""
    runs, _ = cpu_fit
    folder = tmp_path_factory.mktemp("fit_store")
    uri = f"sqlite:///{folder / 'store.db'}"
    h.record(uri, runs[:4], "sweep")
    h.record(uri, [dict(runs[4], tags={**runs[4]["tags"], "dabench.mode": "predict"})], "sweep")  # never a point
    h.record(uri, h.cpu_runs(GRID, start=100, scale=0.6), "later")
    return uri, folder


def _fit_cli(*argv: str, capsys) -> tuple[int, str, str]:
    from dabench.cli.fit import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_fits_from_mlflow_logs_the_set_and_exports_it(store, tmp_path, monkeypatch, capsys):
    """``dabench fit --from-mlflow`` (its main, in-process): a named set in the user folder, logged
    on its own MLflow run, exported, used by hardware.constants=NAME and =FILE; the shipped set is
    never written."""
    uri, _ = store
    monkeypatch.setenv("DABENCH_CONSTANTS_DIR", str(tmp_path / "sets"))
    published = constants.path_of("published").read_text()
    code, out, _ = _fit_cli("--from-mlflow", "sweep", "--name", "mine", "--tracking-uri", uri, capsys=capsys)
    assert code == 0, out
    assert "4 measured ok (points)" in out and "constants changed (old -> new, bounds)" in out
    assert "out of sample (leave one config out): published" in out and "noise floor" in out
    assert out.strip().splitlines()[-1].startswith("published_median_abs_error=")
    data = json.loads((tmp_path / "sets" / "mine.json").read_text())
    assert data["source"]["store"] == uri and len(data["source"]["run_ids"]) == 4
    assert constants.path_of("published").read_text() == published  # never overwritten

    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    logged = client.search_runs([client.get_experiment_by_name("dabench-fit").experiment_id])
    assert logged[0].data.tags["dabench.kind"] == "constant_set" and logged[0].data.tags["dabench.constants"] == "mine"
    assert [a.path for a in client.list_artifacts(logged[0].info.run_id, "constant_set")] == ["constant_set/mine.json"]
    # the fit's own run and the predicted run never become points
    from dabench.cli.fit.from_mlflow import run_dicts
    from dabench.report.frame import load_frame

    frame, _ = load_frame(uri)
    points, _ = points_from_runs(run_dicts(frame))
    assert len(points) == 4 + len(GRID)

    code, exported, _ = _fit_cli("--export", "mine", capsys=capsys)
    assert code == 0 and json.loads(exported)["platforms"]["cpu"]["constants"] == data["platforms"]["cpu"]["constants"]
    (tmp_path / "shared.json").write_text(exported)
    code, _, err = _fit_cli("--from-mlflow", "sweep", "--name", "published", "--tracking-uri", uri, capsys=capsys)
    assert code == 2 and "never written from runs" in err
    _predict_with_sets(tmp_path / "shared.json", data)


def _predict_with_sets(shared, data):
    from dabench.api import predict

    base = ["hardware=cpu", "model.n_layers=4", "model.hidden_size=128", "precision=bf16", "run.batch_size=1"]
    shipped = predict(base)
    named = predict(base + ["hardware.constants=mine"])
    filed = predict(base + [f"hardware.constants={shared}"])
    assert shipped.notes["dabench.constants"] == "published"
    assert named.notes["dabench.constants"] == "mine" and filed.notes["dabench.constants"] == "mine"
    assert filed.notes["dabench.constants_ref"] == str(shared)
    assert named.ok and filed.ok and shipped.ok, (named.reason, filed.reason, shipped.reason)
    value = named.metrics["throughput.samples_per_s"]
    assert value == pytest.approx(filed.metrics["throughput.samples_per_s"])
    assert value < shipped.metrics["throughput.samples_per_s"]  # the fitted set is slower: the machine was
    factor = data["platforms"]["cpu"]["band"]["factor"]
    assert named.metrics["throughput.samples_per_s.hi"] == pytest.approx(value * factor)
    far = predict(["hardware=cpu", "model.n_layers=24", "hardware.constants=mine", "precision=fp32"])
    assert "n_layers 24 outside [2, 8]" in far.notes["dabench.constants_note"]
    missing = predict(base + ["hardware.constants=no_such_set"])
    assert missing.status.value == "invalid_config" and "no constant set 'no_such_set'" in missing.reason


def test_drift_flags_a_set_whose_runs_leave_its_band(store, tmp_path, monkeypatch, cpu_fit):
    """Injected out-of-band runs (the same configs 40% slower) make doctor flag the set and name
    the command that refits it; in-band runs do not."""
    runs, g = cpu_fit
    data = build_set("mine", [g], {"kind": "mlflow", "store": "x", "run_ids": []})
    points, _ = points_from_runs(runs)
    steady = drift("mine", data, points)[0]
    assert steady.n == len(runs) and not steady.drifted
    slow, _ = points_from_runs(h.cpu_runs(GRID, start=100, scale=0.6))
    moved = drift("mine", data, slow)[0]
    assert moved.outside == moved.n == len(GRID) and moved.drifted

    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "mine.json").write_text(json.dumps(data))
    monkeypatch.setenv("DABENCH_CONSTANTS_DIR", str(sets))
    from dabench.cli.doctor import check_constants

    said: list[str] = []
    found = check_constants(store[0], said.append)
    assert [d.drifted for d in found if d.name == "mine"] == [True]
    line = [s for s in said if s.startswith("DRIFT: constant set mine (cpu)")][0]
    assert "recent measured cpu runs outside its 80% band" in line
    assert "python -m dabench fit --from-mlflow SELECTION --name mine" in line


def test_the_shipped_set_is_no_fit_from_runs():
    """Test fixtures of measured runs never ship as ``published``: it is built from points.csv."""
    shipped = json.loads(constants.path_of("published").read_text())
    assert "source" not in shipped
    assert all("host_key" not in e for e in shipped["platforms"].values())
    assert constants.path_of("mine").parent == constants.user_dir()


def test_a_stored_infinity_is_skipped_and_counted_and_an_unknown_host_is_named(tmp_path, monkeypatch, capsys, cpu_fit):
    """MLflow keeps inf as 1.8e308: such a run is no point (it made a band factor of 1e305); it is
    counted in one line. ``--host``/``--arch`` naming no measured machine: exit 2, the known ones listed."""
    from mlflow.tracking import MlflowClient

    runs, _ = cpu_fit
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    good = h.record(uri, runs[:4], "sweep")
    bad = h.record(uri, runs[4:5], "sweep")[0]
    MlflowClient(uri).log_metric(bad, "throughput.samples_per_s", math.inf)
    monkeypatch.setenv("DABENCH_CONSTANTS_DIR", str(tmp_path / "sets"))
    code, out, err = _fit_cli("--from-mlflow", "sweep", "--name", "x", "--tracking-uri", uri, "--no-log", capsys=capsys)
    assert code == 0, out + err
    assert "4 measured ok (points), 1 left out" in out
    assert f"skipped 1 run(s) with a stored metric not finite or out of its range (first: {bad}" in out
    assert sorted(json.loads((tmp_path / "sets" / "x.json").read_text())["source"]["run_ids"]) == sorted(good)
    code, out, err = _fit_cli("--from-mlflow", "sweep", "--host", "nosuch", "--tracking-uri", uri, capsys=capsys)
    assert code == 2 and err.strip() == (
        f"dabench fit: --host 'nosuch': no measured run of it in this selection (measured here: {h.CPU_HOST!r})"
    )
    code, _, err = _fit_cli("--from-mlflow", "--arch", "ipu", "--tracking-uri", uri, capsys=capsys)
    assert code == 2 and "--arch 'ipu': no measured run of it in this selection (measured here: 'cpu')" in err


@pytest.mark.parametrize("n", [1, 8, 40, 1500])
def test_the_drift_tail_is_the_binomial_tail(n):
    """at_least(k, n, p) == P(X >= k), X ~ Binomial(n, p) (scipy's survival function), at the
    edges too: no miss, every miss, more misses than points, p at 0 and 1."""
    from scipy.stats import binom

    for p in (0.0, 0.2, 0.5, 1.0):
        for k in (0, 1, n // 5, n // 2, n, n + 1):
            assert at_least(k, n, p) == pytest.approx(float(binom.sf(k - 1, n, p)), rel=1e-9, abs=1e-300), (k, n, p)
