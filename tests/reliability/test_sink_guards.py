"""The guards in front of every sink (docs/reliability.md, "Sinks and the fault matrix"): names,
keys and values against the tracking store's limits (tracking/naming.py), every sink's path in
pre-flight (pipeline/preflight.check_sink), relative URIs from the launch folder, and the grid's
results.csv while its runs wait in the outbox."""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from dabench.pipeline.preflight import check_sink, check_store, command_line_dirs, resolve_launch
from dabench.runtime.sinks import SINKS, SinkError, cell, write_csv, write_text
from dabench.tracking import naming

PREDICT = ["hardware=ipu", "hardware.mode=predict", "model=tiny"]


# ----------------------------------------------------------------------------- CSV cells

#: text a user can give (a run name, a tag, an ingested section name) that a spreadsheet would run
FORMULAS = ["=1+1", '=HYPERLINK("http://x","y")', "+sweeps=ipu_deploy", "-x", "@SUM(A1)", "\t=1", "\r=1"]


def test_a_csv_cell_never_starts_a_formula_and_numbers_stay_numbers(tmp_path):
    import csv

    import pandas as pd

    assert [cell(v) for v in FORMULAS] == ["'" + v for v in FORMULAS]
    for kept in ["-1.5", "+2", "-inf", "1e-3", "plain", "a=b", 3, -1.5, None, ""]:
        assert cell(kept) == kept
    printable = FORMULAS[:5]  # (names and tags refuse control characters)
    frame = pd.DataFrame({"run_name": printable, "value": range(5)}, index=printable)
    path = write_csv("exports", tmp_path / "t.csv", frame, index_label="row")
    rows = list(csv.reader(path.open(newline="")))[1:]
    assert [row[:2] for row in rows] == [["'" + v] * 2 for v in printable]
    assert [row[2] for row in rows] == [str(i) for i in range(5)]


# ----------------------------------------------------------------------------- names, keys, values


def test_the_limits_are_mlflows_own():
    from mlflow.store.tracking.dbmodels.models import SqlRun
    from mlflow.utils import validation

    assert naming.MAX_KEY_CHARS == validation.MAX_ENTITY_KEY_LENGTH
    assert naming.MAX_PARAM_CHARS == validation.MAX_PARAM_VAL_LENGTH
    assert naming.MAX_TAG_CHARS == validation.MAX_TAG_VAL_LENGTH
    assert naming.MAX_EXPERIMENT_CHARS == validation.MAX_EXPERIMENT_NAME_LENGTH
    assert naming.MAX_RUN_NAME_CHARS == SqlRun.__table__.c.name.type.length


KEYS = ["a", "a.b", "a/b", "a b", "a:b", "é_ü", "a-b_c.d", "", "../x", "/abs", "a//b", "a/./b", "x!", "a\nb", "a$b"]
KEYS += ["k" * 250, "k" * 251]


@pytest.mark.parametrize("key", KEYS)
def test_a_key_is_refused_exactly_when_mlflow_refuses_it(key):
    from mlflow.exceptions import MlflowException
    from mlflow.utils.validation import _validate_length_limit, _validate_tag_name

    try:
        _validate_tag_name(key)
        _validate_length_limit("key", naming.MAX_KEY_CHARS, key)
        mlflow_refuses = key == ""  # MLflow accepts the empty name; the store's key column does not
    except MlflowException:
        mlflow_refuses = True
    assert (naming.key_problem(key) is not None) == mlflow_refuses, key


def _composed(**tracking):
    from dabench.config.compose import compose

    container = compose(PREDICT)
    container["tracking"] = {**container["tracking"], **tracking}
    return container


@pytest.mark.parametrize(
    ("tracking", "field"),
    [
        ({"run_name": "r" * 251}, "tracking.run_name"),
        ({"experiment": "e" * 501}, "tracking.experiment"),
        ({"tags": {"bad key!": "v"}}, "tracking.tags.bad key!"),
        ({"tags": {"../up": "v"}}, "tracking.tags.../up"),
        ({"tags": {"note": "v" * 8001}}, "tracking.tags.note"),
    ],
)
def test_a_chosen_name_the_store_refuses_is_refused_before_any_work(tracking, field):
    from dabench.pipeline.job import prepare

    job = prepare(_composed(**tracking))
    assert job.error is not None and job.rc is None  # by the config's own limits, or the store's
    line = str(job.error)
    assert line.startswith(f"invalid config: {field}=") and "\n" not in line and len(line) < 400, line


def test_a_long_value_of_the_config_is_refused_with_its_field():
    from dabench.pipeline.job import prepare

    container = _composed()
    container["hardware"] = {**container["hardware"], "options": {"note": "x" * 7000}}
    error = prepare(container).error
    assert error is not None and "hardware.options.note=" in str(error) and "6000" in str(error)


def test_the_run_command_refuses_a_value_the_store_would_refuse(tmp_path):
    """``python -m dabench ... +hardware.options.note=<7000 chars>``: exit 2, one line, no store."""
    from tests.conftest import run_dabench

    note = "+hardware.options.note=" + "x" * 7000
    done = run_dabench(*PREDICT, note, cwd=tmp_path, code=None, unset=("MLFLOW_TRACKING_URI", "DABENCH_FAULT"))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and "hardware.options.note=" in lines[0] and "6000" in lines[0], lines
    assert not (tmp_path / "mlruns").exists()  # nothing recorded


class _Client:
    def __init__(self):
        self.batches = []

    def log_batch(self, run_id, metrics=(), params=(), tags=()):
        self.batches.append((list(metrics), list(params), list(tags)))


def test_generated_values_and_names_are_shortened_with_a_note():
    from dabench.tracking.writes import write_batch

    client = _Client()
    write_batch(client, "r", params={"p": "x" * 7000}, tags={"t": "y" * 9000, "short": "ok"})
    _, params, tags = client.batches[0]
    assert len(params[0].value) == naming.MAX_PARAM_CHARS and params[0].value.endswith("...")
    by_key = {t.key: t.value for t in tags}
    assert len(by_key["t"]) == naming.MAX_TAG_CHARS and by_key["short"] == "ok"
    assert by_key[naming.TRUNCATED_TAG] == "p (7000 chars -> 6000); t (9000 chars -> 8000)"
    name, note = naming.fit_value("run name", "n" * 300, naming.MAX_RUN_NAME_CHARS)
    assert len(name) == naming.MAX_RUN_NAME_CHARS and note == "run name (300 chars -> 250)"
    assert naming.fit_value("run name", "short", naming.MAX_RUN_NAME_CHARS) == ("short", None)


# ----------------------------------------------------------------------------- paths


def test_a_file_where_a_folder_is_needed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").write_text("x")
    [problem] = check_sink("run_dir", tmp_path / "plain" / "sub", "hydra.run.dir")
    assert "plain is not a folder" in problem.fix
    [problem] = check_sink("run_dir", tmp_path / "plain", "hydra.run.dir")
    assert "is not a folder" in problem.fix
    (tmp_path / "adir").mkdir()
    [problem] = check_sink("exports", tmp_path / "adir", "--csv")
    assert "is a folder, not a file" in problem.fix


def test_the_file_system_root_is_refused_as_a_folder():
    [problem] = check_sink("run_dir", "/", "hydra.run.dir")
    assert "file-system root" in problem.fix


def test_a_dangling_link_on_the_way(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    [problem] = check_sink("store", tmp_path / "gone" / "mlflow.db", "tracking.uri")
    assert "does not exist" in problem.fix
    [problem] = check_store(f"sqlite:///{tmp_path / 'gone' / 'm.db'}", "tracking.uri", 2)
    assert "is a link to" in problem.fix


def test_a_link_out_of_the_launch_folder(tmp_path, monkeypatch):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    (home / "outputs").symlink_to(elsewhere)
    monkeypatch.chdir(home)
    [problem] = check_sink("run_dir", home / "outputs" / "run", "hydra.run.dir")
    assert "link out of the launch folder" in problem.fix
    assert check_sink("run_dir", elsewhere / "run", "hydra.run.dir") == []  # the real path is taken as given
    (home / "inside").symlink_to(home / "outputs2", target_is_directory=True)
    (home / "outputs2").mkdir()
    assert check_sink("run_dir", home / "inside" / "run", "hydra.run.dir") == []


def test_relative_paths_and_uris_are_taken_from_the_launch_folder(tmp_path, monkeypatch):
    from dabench.tracking.store import absolute_uri

    monkeypatch.chdir(tmp_path)
    assert resolve_launch("mlruns/x.db") == tmp_path / "mlruns/x.db"
    assert absolute_uri("sqlite:///rel/m.db") == f"sqlite:///{tmp_path}/rel/m.db"
    assert absolute_uri("file:rel") == (tmp_path / "rel").as_uri()
    assert absolute_uri("mlruns") == str(tmp_path / "mlruns")
    for kept in ("sqlite:////abs/m.db", "sqlite:///:memory:", "http://h:5000", "postgresql://u@h/db", "databricks"):
        assert absolute_uri(kept) == kept
    (tmp_path / "rel").write_text("x")  # the relative store's folder is a file, seen from the launch folder
    [problem] = check_store("sqlite:///rel/m.db", "tracking.uri", 2)
    assert str(tmp_path / "rel") in problem.fix


def test_output_folders_on_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("x")
    [problem] = command_line_dirs(["hydra.run.dir=f/run", "model=tiny"])
    assert problem.field == "hydra.run.dir"
    assert command_line_dirs(["hydra.sweep.dir=multirun/${now:%H}", "hydra.run.dir=ok/run"]) == []


def _immutable(folder: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0


def test_a_folder_nobody_may_write_real_not_injected(tmp_path, monkeypatch):
    """A real denial (an immutable folder: even root may not write; chmod does not stop root)."""
    monkeypatch.chdir(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    if not _immutable(locked):
        pytest.skip("chattr +i is not available here")
    try:
        [problem] = check_sink("exports", locked / "out.csv", "--csv")
        assert "not writable" in problem.fix
        with pytest.raises(SinkError) as caught:
            write_text("exports", locked / "out.csv", "a,b\n")
        assert "\n" not in str(caught.value) and "exports" in str(caught.value)
        assert os.listdir(locked) == []  # no temporary file left
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)


def test_every_sink_is_checked_by_kind(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, sink in SINKS.items():
        assert check_sink(name, tmp_path / "new" / name, name) == [], name
        assert sink.point == f"write.{name}"


# ----------------------------------------------------------------------------- the grid


def test_the_grid_writes_results_csv_while_its_runs_wait_in_the_outbox(tmp_path, monkeypatch):
    from dabench.cli.grid import main

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DABENCH_OUTBOX", str(tmp_path / "outbox"))
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--quiet", *PREDICT, "run.batch_size=1,2", f"tracking.uri=http://127.0.0.1:{port}"])
    assert code == 0, err.getvalue()[-2000:]
    [csv] = list(tmp_path.glob("multirun/*/*/results.csv"))
    import pandas as pd

    table = pd.read_csv(csv)
    assert len(table) == 2 and set(table["status"]) == {"ok"}
    assert "outbox" in out.getvalue()
    assert len(list((tmp_path / "outbox").glob("*.json"))) == 3  # the parent and its two runs


def test_the_grid_resolves_interpolations_it_was_given(monkeypatch):
    from dabench.pipeline.grid import Composer, expand

    monkeypatch.setenv("DABENCH_TEST_NOTE", "resolved-value")
    jobs = expand(["run.batch_size=1,2", "+tracking.tags.note=${oc.env:DABENCH_TEST_NOTE}"])
    composer = Composer()
    assert [composer.compose(job)["tracking"]["tags"]["note"] for job in jobs] == ["resolved-value"] * 2
