"""Every kind of file dabench reads as data goes through its guarded reader (dabench/runtime/
readers.py): a real file of each kind, mutated (Hypothesis), is either read with every value
checked or refused as one line naming the file; never another exception, never damage as data.
Files that are not regular files are refused at once (a FIFO must not block)."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dabench.config.files import dimension_problem, read_sweep
from dabench.core.readers import DamagedFile
from dabench.fit.runs import points_from_runs
from dabench.host.cache import CalibrationCache
from dabench.perfmodel import constants
from dabench.tracking.outbox import Journal

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = (ROOT / "dabench" / "fit" / "published.json").read_bytes()
SWEEP = (ROOT / "sweeps" / "ipu_deploy.yaml").read_bytes()
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def calibration_bytes() -> bytes:
    entry = {"value": 1e11, "samples": [1e11, 1.1e11], "spread": 0.02, "load_per_core": 0.1, "measured_at": "t"}
    return json.dumps({"cpu|threads=2|torch=x|gemm_fp32": entry, "cpu|threads=2|torch=x|copy": entry}).encode()


def journal_bytes(ident: str) -> bytes:
    return json.dumps(
        {
            "version": 1,
            "id": ident,
            "uri": "http://x",
            "experiment": "dabench",
            "run_name": "r",
            "start_ms": 1,
            "tags": {"dabench.mode": "predict"},
            "parent": None,
            "server_run_id": None,
            "params": {"run.batch_size": "4"},
            "metrics": {"throughput.samples_per_s": 12.5, "x": float("nan")},
            "logged_tags": {},
            "artifacts": [],
            "status": "ok",
            "reason": "",
            "end_ms": 2,
            "closed": True,
            "pid": 1,
            "acked": {"created": False, "logged": False, "artifacts": False, "closed": False},
        }
    ).encode()


#: the values the readers guarantee (drawn half the time: a large file has many other numbers)
FOCUS = ("factor", "nominal_coverage", "spread", "load_per_core", "start_ms", "end_ms")


def _focus(parent: dict, key) -> bool:
    return key in FOCUS or (key == "value" and parent.get("kind") in ("fitted", None))


#: text edits that damage a value while keeping the file parseable
NUMBER_EDITS = [b"NaN", b"Infinity", b"-1", b"0", b"1e999", b'"x"', b"true", b"null", b"[]", b"{}"]


@st.composite
def mutated(draw, original: bytes) -> bytes:
    """``original`` with one damage: truncated, bytes flipped, a number replaced, or junk spliced in."""
    data = bytearray(original)
    kind = draw(st.sampled_from(["truncate", "flip", "number", "splice", "leaf", "leaf", "leaf"]))
    if kind == "leaf" and original.lstrip().startswith(b"{"):  # a JSON value replaced, the file still parses
        document = json.loads(original)
        leaves = list(_leaves(document))
        focus = (
            [w for w, parent in _leaves_with_parent(document) if _focus(parent, w[-1])] if draw(st.booleans()) else []
        )
        leaves = focus or leaves
        where = leaves[draw(st.integers(0, len(leaves) - 1))]
        node = document
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = draw(st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, "x", True, None, [], 1e308]))
        return json.dumps(document).encode()
    if kind == "leaf":
        kind = "number"
    if kind == "truncate":
        return bytes(data[: draw(st.integers(0, len(data) - 1))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        return bytes(data)
    if kind == "number":
        import re

        spans = [m.span() for m in re.finditer(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?", original)]
        a, b = spans[draw(st.integers(0, len(spans) - 1))]
        return original[:a] + draw(st.sampled_from(NUMBER_EDITS)) + original[b:]
    i = draw(st.integers(0, len(data)))
    return bytes(data[:i]) + draw(st.binary(min_size=1, max_size=40)) + bytes(data[i:])


def _leaves(node, where=()):
    """Paths to the numbers (and number-like texts) of a JSON document."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from _leaves(value, (*where, key))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) or key in ("value", "factor"):
            yield (*where, key)


def _leaves_with_parent(node, where=()):
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from _leaves_with_parent(value, (*where, key))
        elif isinstance(node, dict):
            yield (*where, key), node


def refused_in_one_line(error: DamagedFile, path: Path) -> None:
    message = str(error)
    assert "\n" not in message and message.startswith(str(path)), message


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# --- constant sets ---------------------------------------------------------------------------


@SETTINGS
@given(data=mutated(PUBLISHED))
def test_a_damaged_constant_set_is_refused_or_every_used_value_checked(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("cs") / "set.json"
    path.write_bytes(data)
    try:
        read = constants.ConstantSet.read(path)
    except DamagedFile as error:
        refused_in_one_line(error, path)
        return
    for arch, entry in (read.get("platforms") or {}).items():
        for c in (entry.get("constants") or {}).values():
            if c.get("kind") == "fitted" and c.get("value") is not None:
                assert math.isfinite(float(c["value"])) and float(c["value"]) > 0, (arch, c)
        band = entry.get("band") or {}
        if band.get("kind") in ("conformal", "wide"):
            assert _finite(band["factor"]) and band["factor"] >= 1
        factor = constants.band(arch, 10.0, read)
        assert factor is None or all(math.isfinite(x) and x > 0 for x in factor)


def test_a_damaged_constant_set_refuses_the_run_before_it_opens(run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    data = json.loads(PUBLISHED)
    data["platforms"]["ipu"]["band"]["factor"] = -3
    bad.write_text(json.dumps(data))
    done = run_cli("hardware=ipu", "hardware.mode=predict", f"hardware.constants={bad}", code=2)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "factor" in lines[0], done.stderr[-2000:]
    assert not (tmp_path / "mlruns").exists()


# --- calibration cache -----------------------------------------------------------------------


@SETTINGS
@given(data=mutated(calibration_bytes()))
def test_a_damaged_calibration_cache_is_never_used_as_data(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("cal") / "calibration.json"
    path.write_bytes(data)
    try:
        entries, problems = CalibrationCache(path).read()
    except DamagedFile as error:
        refused_in_one_line(error, path)
        return
    for problem in problems:
        assert "\n" not in problem and problem.startswith(str(path))
    for entry in entries.values():
        assert _finite(float(entry["value"])) and float(entry["value"]) > 0
        assert all(math.isfinite(float(x)) and float(x) > 0 for x in entry.get("samples", []))
        assert float(entry.get("spread", 0)) >= 0 and float(entry.get("load_per_core", 0)) >= 0


def test_the_calibration_reader_names_a_damaged_entry_and_keeps_the_rest(tmp_path, monkeypatch, caplog):
    from dabench.host import calibrate

    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path))
    good = json.loads(calibration_bytes())
    key = next(iter(good))
    good[key]["value"] = -5.0
    calibrate.calibration_cache().parent.mkdir(parents=True, exist_ok=True)
    calibrate.calibration_cache().write_text(json.dumps(good))
    with caplog.at_level("WARNING"):
        entries = calibrate._read_cache()
    assert key not in entries and len(entries) == 1
    assert any(f"{key}.value=-5: must be > 0" in r.getMessage() for r in caplog.records)


# --- outbox journals -------------------------------------------------------------------------


@SETTINGS
@given(data=mutated(journal_bytes("j1")))
def test_a_damaged_journal_is_refused_by_name_or_read_typed(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("outbox") / "j1.json"
    path.write_bytes(data)
    try:
        journal = Journal.load(path)
    except DamagedFile as error:
        refused_in_one_line(error, path)
        return
    assert journal.data["id"] == "j1" and isinstance(journal.data["params"], dict)
    assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in journal.data["metrics"].values())


# --- sweep files -----------------------------------------------------------------------------


@SETTINGS
@given(data=mutated(SWEEP))
def test_a_damaged_sweep_file_is_refused_by_name_or_checked(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("sweeps") / "ipu_deploy.yaml"
    path.write_bytes(data)
    try:
        _, document = read_sweep(path)
    except DamagedFile as error:
        refused_in_one_line(error, path)
        return
    sweeper = (document.get("hydra") or {}).get("sweeper") or {}
    trials = sweeper.get("n_trials")
    assert trials is None or (isinstance(trials, int) and trials >= 1) or str(trials).startswith("${")
    for key, value in (sweeper.get("params") or {}).items():
        assert dimension_problem(key, value) == ""


@pytest.mark.parametrize(
    "value, problem",
    [
        ("interval(8, 2)", "low 8 > high 2"),
        ("choice()", "empty choice"),
        ("range(4, 2)", "an empty range"),
        ("range(1, 4, 0)", "an empty range"),
        ("interval(a, 2)", "not a value"),
        ("interval(2, 8)", ""),
        ("choice(1, 2)", ""),
        ("4", ""),
    ],
)
def test_a_sweep_dimension_is_checked_when_loaded(tmp_path, value, problem):
    """One line naming the file, the dimension and the value, before anything runs."""
    path = tmp_path / "mine.yaml"
    path.write_text(f"hydra:\n  sweeper:\n    params:\n      run.batch_size: {value}\n")
    if not problem:
        assert read_sweep(path)[1]["hydra"]["sweeper"]["params"]["run.batch_size"] is not None
        return
    with pytest.raises(DamagedFile) as refused:
        read_sweep(path)
    assert str(refused.value).startswith(f"{path}: hydra.sweeper.params.run.batch_size='{value}': ")
    assert problem in str(refused.value) and "\n" not in str(refused.value)


def test_an_aliased_sweep_file_is_refused(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text("a: &a [1, 2]\nb: [*a, *a, *a]\n")
    with pytest.raises(DamagedFile, match="alias"):
        read_sweep(path)


# --- store metrics used for fitting ----------------------------------------------------------

METRIC_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["x", None, True, "1e999", -0.0])
)


@settings(max_examples=150, deadline=None)
@given(
    metrics=st.dictionaries(
        st.sampled_from(
            [
                "throughput.samples_per_s",
                "throughput.tokens_per_s",
                "step_time.median_s",
                "step_time.p10_s",
                "step_time.p90_s",
                "perf.peak_tflops",
                "roofline.ridge_intensity",
                "class_time.matmul",
            ]
        ),
        METRIC_VALUES,
    )
)
def test_damaged_store_metrics_never_become_a_point(metrics):
    run = {
        "run_id": "r1",
        "tags": {"dabench.mode": "measure", "dabench.arch": "cpu", "dabench.status": "ok"},
        "params": {"hardware.arch": "cpu", "model.n_layers": "2"},
        "metrics": metrics,
    }
    points, left = points_from_runs([run])
    for p in points:
        assert math.isfinite(p.published) and p.published > 0
        for value in (p.step_s, p.step_p10, p.step_p90):
            assert math.isnan(value) or (math.isfinite(value) and value > 0)
        assert all(math.isfinite(t) and t >= 0 for t in p.class_times.values())
        assert p.ceilings is None or all(math.isfinite(x) and x > 0 for x in p.ceilings[:2])
    assert len(points) + len(left) == 1 and all("\n" not in x.reason for x in left)


# --- not regular files, and size ------------------------------------------------------------


def test_what_is_no_regular_file_is_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    for path in (fifo, folder, Path("/dev/zero")):
        started = time.monotonic()
        with pytest.raises(DamagedFile, match="not a regular file"):
            constants.ConstantSet.read(path)
        assert time.monotonic() - started < 5
    with pytest.raises(FileNotFoundError):
        Journal.load(tmp_path / "missing.json")


def test_a_file_too_large_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "calibration.json"
    with open(big, "wb") as handle:  # sparse: costs no disk
        handle.truncate(2**31)
    with pytest.raises(DamagedFile, match="more than"):
        CalibrationCache(big).read()


def test_doctor_names_a_damaged_or_blocking_constant_set_and_goes_on(tmp_path, monkeypatch):
    """A FIFO among the user's constant sets used to block ``dabench doctor`` on its read."""
    import signal

    from dabench.cli import doctor

    sets = tmp_path / "constants"
    sets.mkdir()
    os.mkfifo(sets / "blocking.json")
    damaged = {"format": "dabench-constant-set", "format_version": 1, "nominal_coverage": float("nan")}
    (sets / "damaged.json").write_text(json.dumps(damaged))
    monkeypatch.setenv("DABENCH_CONSTANTS_DIR", str(sets))
    said: list[str] = []
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("doctor blocked")))
    signal.alarm(60)
    try:
        doctor.check_constants(f"sqlite:///{tmp_path / 'mlflow.db'}", said.append)
    finally:
        signal.alarm(0)
    skipped = [line for line in said if line.startswith("constant set skipped:")]
    assert any("blocking.json: not a regular file" in line for line in skipped), said
    assert any("damaged.json" in line for line in skipped), said
