"""`dabench ui`: the MLflow UI lands on the runs table with dabench's key columns (docs/ui.md).

Fast tests: the URLs, the saved view, the argument handling, on real SQLite stores. The slow test
starts the real command on a fresh store holding a measured run, a predicted multirun and a failed
run, opens the URL it prints in headless Chromium with a fresh profile and reads the rendered page
(DOM): the model-training runs table, not the GenAI "Traces" overview; the key column headers;
the measured throughput in its cell. The screenshot is kept for CI ($DABENCH_CI_ARTIFACTS, else
ci-artifacts/ in the repository).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from dabench.cli import ui
from dabench.cli.main import COMMANDS
from dabench.tracking.ui_view import (
    KEY_COLUMNS,
    VIEW_KEY,
    VIEW_TAG_PREFIX,
    ensure_saved_view,
    run_url,
    run_urls,
    runs_view_url,
    saved_view_tag,
    ui_base_url,
    view_state,
)
from tests.conftest import CHROMIUM_FLAGS, ROOT, cli_env, dabench_argv, default_sigint, need_chromium

# --- fast: URLs and the saved view ---------------------------------------------------------------


def test_base_url_of_each_store_kind():
    assert ui_base_url("sqlite:////tmp/x/mlflow.db", environ={}) == "http://127.0.0.1:5000"
    assert ui_base_url("postgresql://me:pw@db/mlflow", port=5077, environ={}) == "http://127.0.0.1:5077"
    # a tracking server is its own UI; credentials never go into a link
    assert (
        ui_base_url("https://me:secret@mlflow.example.org:8443/prefix/", environ={})
        == "https://mlflow.example.org:8443/prefix"
    )
    assert ui_base_url("http://[::1]:5000", environ={}) == "http://[::1]:5000"
    assert ui_base_url("sqlite:///x.db", environ={"DABENCH_UI_URL": "http://box:6000/"}) == "http://box:6000"


def test_view_and_run_urls():
    base = "http://127.0.0.1:5000"
    assert runs_view_url(base, "7") == (
        "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=dabench"
    )
    run_id = "a" * 32
    assert run_url(base, run_id, "7") == f"{base}/#/experiments/7/runs/{run_id}?workflowType=machine_learning"
    assert run_url(base, run_id) == f"{base}/#/runs/{run_id}"


def test_the_saved_view_is_mlflows_envelope_with_the_key_columns_in_order():
    key, value = saved_view_tag(now_ms=1_700_000_000_000)
    assert key == VIEW_TAG_PREFIX + VIEW_KEY == "mlflow.sharedViewState.dabench"
    envelope = json.loads(value)
    # MLflow 3.17.2's reader: an object with a string name, a number createdAt and a string state
    assert isinstance(envelope["name"], str) and envelope["createdAt"] == 1_700_000_000_000
    state = json.loads(envelope["state"])
    assert state == view_state()
    wanted = [
        "tags.`dabench.mode`",
        "tags.`dabench.status`",
        "metrics.`throughput.samples_per_s`",
        "metrics.`throughput.tokens_per_s`",
        "metrics.`tier1.compute_efficiency`",
        "metrics.`tier1.allocation_ratio`",
        "metrics.`tier1.load_imbalance`",
        "tags.`dabench.diagnosis`",
        "tags.`dabench.reason`",
    ]
    assert state["selectedColumns"][: len(wanted)] == wanted
    assert [c for c in state["columnOrder"] if c in wanted] == wanted
    assert set(state["selectedColumns"]) <= set(state["columnWidths"]) and len(key) + len(value) < 5000


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[str, MlflowClient]:
    """One real SQLite store for the fast tests (creating its schema takes seconds on a busy machine)."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('ui_fast') / 'mlflow.db'}"
    client = MlflowClient(uri)
    client.create_experiment("dabench")
    return uri, client


def test_the_saved_view_is_written_once_and_refreshed_when_stale(store):
    _, client = store
    experiment = client.create_experiment("saved-view")
    assert ensure_saved_view(client, experiment, client.get_experiment(experiment).tags)
    assert not ensure_saved_view(client, experiment, client.get_experiment(experiment).tags)
    key, _ = saved_view_tag()
    client.set_experiment_tag(experiment, key, json.dumps({"name": "old", "createdAt": 1, "state": "{}"}))
    assert ensure_saved_view(client, experiment, client.get_experiment(experiment).tags)
    assert json.loads(json.loads(client.get_experiment(experiment).tags[key])["state"]) == view_state()
    assert len(KEY_COLUMNS) == len(view_state()["selectedColumns"])


def test_run_links_find_the_experiment_and_never_create_a_store(store, tmp_path):
    uri, client = store
    experiment = client.get_experiment_by_name("dabench").experiment_id
    run = client.create_run(experiment).info.run_id
    links = run_urls(uri, [(run, "dabench")])
    assert links == {run: f"http://127.0.0.1:5000/#/experiments/{experiment}/runs/{run}?workflowType=machine_learning"}
    missing = tmp_path / "none" / "mlflow.db"
    assert run_urls(f"sqlite:///{missing}", [(run, "dabench")]) == {run: f"http://127.0.0.1:5000/#/runs/{run}"}
    assert not missing.exists()


# --- fast: the command's arguments and errors ----------------------------------------------------


def test_ui_is_a_command_with_help(capsys):
    assert COMMANDS["ui"][0] == "dabench.cli.ui"
    assert ui.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--port" in out and "--no-browser" in out and "--tracking-uri" in out and "127.0.0.1" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--port", "70000"], "--port=70000: must be >= 0 and <= 65535"),
        (["--timeout-s", "0"], "--timeout-s=0: must be > 0 and <= 86400"),
    ],
)
def test_bad_arguments_are_one_line(argv, message, capsys):
    assert ui.main(argv) == 2 and message in capsys.readouterr().err


def test_a_port_in_use_is_one_line_naming_the_flag():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ui.UiError, match=rf"^--port={port}: cannot serve on 127.0.0.1:{port} .*--port 0"):
            ui.free_port("127.0.0.1", port)
    assert ui.free_port("127.0.0.1", 0) > 0


def test_an_unknown_experiment_lists_the_experiments(store, capsys):
    uri, _ = store
    code = ui.main(["--tracking-uri", uri, "--experiment", "nope", "--port", "0", "--no-browser"])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and last.startswith(f"dabench ui: --experiment='nope': not in {uri}; experiments: ")
    assert "dabench" in last.split("experiments: ")[1].split(", ")


def test_server_command_and_browser_choice(tmp_path, monkeypatch):
    command = ui.server_command(f"sqlite:///{tmp_path / 'mlflow.db'}", "127.0.0.1", 5077)
    assert command[1:4] == ["-m", "mlflow", "server"] and command[command.index("--workers") + 1] == "1"
    assert command[command.index("--artifacts-destination") + 1] == (tmp_path / "artifacts").as_uri()
    if sys.platform.startswith("linux"):
        monkeypatch.delenv("DISPLAY", raising=False)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        assert ui.open_browser("http://127.0.0.1:1/") is False  # no display: no text browser in the terminal


@pytest.mark.parametrize("host, browse", [("0.0.0.0", "127.0.0.1"), ("::1", "[::1]")])
def test_the_url_names_an_address_a_browser_here_opens(host, browse, tmp_path, monkeypatch):
    seen = []

    def view_url(uri, base, experiment):
        seen.append(base)
        raise ui.UiError("stop before the server starts")

    monkeypatch.setattr(ui, "view_url", view_url)
    argv = ["--host", host, "--allow-remote", "--port", "0", "--no-browser"]
    assert ui.main([*argv, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]) == 2
    if seen or host != "::1":  # a machine without IPv6 loopback refuses ::1 before the URL
        assert re.fullmatch(rf"http://{re.escape(browse)}:\d+", seen[0]), seen


# --- slow: the real UI in a real browser ---------------------------------------------------------

WINDOW = (2560, 1100)  #: a QHD screen: every key column fits beside MLflow's Assistant panel
HEADERS = {
    "tags.`dabench.mode`": "dabench.mode",
    "tags.`dabench.status`": "dabench.status",
    "metrics.`throughput.samples_per_s`": "throughput.samples_per_s",
    "metrics.`throughput.tokens_per_s`": "throughput.tokens_per_s",
    "metrics.`tier1.compute_efficiency`": "tier1.compute_efficiency",
    "metrics.`tier1.allocation_ratio`": "tier1.allocation_ratio",
    "metrics.`tier1.load_imbalance`": "tier1.load_imbalance",
    "tags.`dabench.diagnosis`": "dabench.diagnosis",
    "tags.`dabench.reason`": "dabench.reason",
}


def artifacts_dir() -> Path:
    folder = Path(os.environ.get("DABENCH_CI_ARTIFACTS") or ROOT / "ci-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _first_line(process: subprocess.Popen, timeout_s: float) -> str:
    """The first line ``process`` writes to stdout, waiting at most ``timeout_s``."""
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return found[0].strip() if found else ""


class _Cells(HTMLParser):
    """col-id -> texts of the elements with a ``role`` and a ``col-id`` (ag-grid's header cells and
    grid cells), each text the element's whole text content."""

    VOID = {"input", "img", "br", "hr", "meta", "link", "source", "area", "col", "wbr"}

    def __init__(self, role: str):
        super().__init__()
        self.role, self.depth, self.open = role, 0, []  # open: [depth, col-id, parts]
        self.found: dict[str, list[str]] = {}

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        self.depth += 1
        attributes = dict(attrs)
        if attributes.get("role") == self.role and attributes.get("col-id"):
            self.open.append([self.depth, attributes["col-id"], []])

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if self.open and self.open[-1][0] == self.depth:
            _, column, parts = self.open.pop()
            self.found.setdefault(column, []).append(" ".join(" ".join(parts).split()))
        self.depth -= 1

    def handle_data(self, data):
        for cell in self.open:
            cell[2].append(data)


def _cells(dom: str, role: str) -> dict[str, list[str]]:
    """col-id -> texts of the rendered cells with ``role`` (``columnheader`` or ``gridcell``)."""
    parser = _Cells(role)
    parser.feed(dom)
    return parser.found


@pytest.fixture(scope="module")
def ui_store(tmp_path_factory) -> Path:
    """A fresh store: a measured run, a predicted multirun (parent + 2 children) and a failed run,
    recorded concurrently by three real ``python -m dabench``."""
    folder = tmp_path_factory.mktemp("ui_store")
    env = cli_env(folder)
    commands = {
        "measured": ("run.warmup_steps=1", "run.timed_steps=2"),
        "predicted": ("hardware=ipu", "hardware.mode=predict", "model.n_layers=1,2", "-m"),
        "failed": (
            "hardware=wse2",
            "hardware.mode=predict",
            "model=gpt2_small",
            "model.n_layers=400",
            "model.hidden_size=8192",
            "model.n_heads=64",
            "run.batch_size=112",
        ),
    }
    started = {
        name: subprocess.Popen(
            dabench_argv(*args), cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for name, args in commands.items()
    }
    outputs = {name: p.communicate(timeout=400)[0] for name, p in started.items()}
    codes = {name: p.returncode for name, p in started.items()}
    assert codes == {"measured": 0, "predicted": 0, "failed": 1}, {n: o[-1500:] for n, o in outputs.items()}
    assert "dabench: capacity" in outputs["failed"]
    return folder


@pytest.mark.slow
def test_dabench_ui_lands_on_the_runs_table_with_the_key_columns(ui_store):
    chromium = need_chromium()
    env = {**cli_env(ui_store), "CI": os.environ.get("CI", "")}
    server = subprocess.Popen(
        dabench_argv("ui", "--no-browser", "--port", "0"),
        cwd=ui_store,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        url = _first_line(server, 240)
        assert re.fullmatch(
            r"http://127\.0\.0\.1:\d+/#/experiments/\d+/runs\?workflowType=machine_learning"
            r"&viewStateShareKey=dabench",
            url,
        ), (url, server.poll())
        base = url.split("/#/")[0]
        with urllib.request.urlopen(f"{base}/health", timeout=10) as answer:  # it answers once the URL is out
            assert answer.status == 200

        shot = ui_store / "mlflow-ui.png"
        with tempfile.TemporaryDirectory() as profile:  # a fresh browser: nothing in localStorage
            done = subprocess.run(
                [
                    chromium,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={profile}",
                    f"--window-size={WINDOW[0]},{WINDOW[1]}",
                    "--virtual-time-budget=25000",
                    f"--screenshot={shot}",
                    "--dump-dom",
                    url,
                ],
                capture_output=True,
                text=True,
                timeout=180,
            )
        dom = done.stdout
        shutil.copy(shot, artifacts_dir() / "mlflow-ui-runs.png")
        (artifacts_dir() / "mlflow-ui-runs.html").write_text(dom)
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())

        # the model-training runs table, not the GenAI overview of traces
        assert 'role="grid"' in dom and "matching runs" in text, text[:2000]
        for genai in ("No data available", "Detect Issues", "Usage Quality Tool calls"):
            assert genai not in text, f"GenAI page shown: {genai!r} in the page"
        assert "Model registry" in text and "Judges" not in text  # the model-training side bar
        assert "dabench: key columns" in text  # the saved view is the one shown

        headers = _cells(dom, "columnheader")
        for column, label in HEADERS.items():
            assert column in headers and label in " ".join(headers[column]), (column, sorted(headers))
        for hidden in ("attributes.`Source`", "attributes.`Models`", "attributes.`Dataset`"):
            assert hidden not in headers

        # rows: the measured run's throughput in its cell; PREDICTED runs say so; the failure says why
        client = MlflowClient(env["MLFLOW_TRACKING_URI"])
        runs = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
        measured = next(r for r in runs if r.data.tags.get("dabench.mode") == "measure")
        value = measured.data.metrics["throughput.samples_per_s"]
        cells = _cells(dom, "gridcell")
        shown = [float(t) for t in cells["metrics.`throughput.samples_per_s`"] if re.fullmatch(r"\d[0-9.e+-]*", t)]
        assert any(abs(v - value) <= 1e-6 * value for v in shown), (value, cells["metrics.`throughput.samples_per_s`"])
        assert "measure" in cells["tags.`dabench.mode`"] and "predict" in cells["tags.`dabench.mode`"]
        assert "capacity" in cells["tags.`dabench.status`"]
        assert any("capacity exceeded" in t for t in cells["tags.`dabench.reason`"])
        assert any("multirun hardware=ipu" in t for t in cells["attributes.`Run Name`"])  # the sweep's parent row

        from PIL import Image, ImageStat

        image = Image.open(shot).convert("L")
        assert image.size == WINDOW and ImageStat.Stat(image).stddev[0] > 15, "screenshot looks blank"

        # the same command against that server as the store: prints its URL, starts nothing
        again = subprocess.run(
            dabench_argv("ui", "--no-browser", "--tracking-uri", base),
            cwd=ui_store,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 0 and again.stdout.splitlines()[0] == url, again.stderr[-1500:]
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        try:
            code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    assert code == 0, server.stderr.read()[-2000:]
    time.sleep(1)
    with pytest.raises(OSError):  # Ctrl-C stopped the MLflow server too
        urllib.request.urlopen(f"{base}/health", timeout=5)


def test_a_tracking_server_that_does_not_answer_is_one_line_and_exit_1(capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    port = ui.free_port("127.0.0.1", 0)  # nothing listens there
    assert ui.main(["--no-browser", "--tracking-uri", f"http://u:hunter2@127.0.0.1:{port}"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not answer" in err and "hunter2" not in err and "Traceback" not in err


# --- the UI stays on this machine unless asked -------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "0"])
def test_a_host_beyond_loopback_needs_allow_remote(host, tmp_path, capsys):
    """``0`` and ``::`` are every interface too (the two cases the flag's first version missed)."""
    store = tmp_path / "mlflow.db"
    code = ui.main(["--host", host, "--no-browser", "--port", "0", "--tracking-uri", f"sqlite:///{store}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"--host={host}" in err[0] and "--allow-remote" in err[0], err
    assert "no authentication" in err[0] and not store.exists()  # refused before the store is touched


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.1"])
def test_loopback_hosts_are_local(host):
    try:
        addresses = ui.check_host(host, allow_remote=False)
    except ui.UiError as error:  # a machine without IPv6 loopback: the name does not resolve
        assert host == "::1", error
        return
    assert addresses and ui.remote_warning(host, 5000, addresses) is None


def test_allow_remote_names_the_addresses_and_warns():
    addresses = ui.check_host("0.0.0.0", allow_remote=True)
    warning = ui.remote_warning("0.0.0.0", 5077, addresses)
    assert addresses == ["0.0.0.0"] and "every interface port 5077" in warning and "no authentication" in warning
