"""A tracking server that does not answer (it accepts connections and never replies, or refuses
them): every command that opens it ends within the call bound with one ``tracking_error`` line."""

from __future__ import annotations

import socket
import time

import pytest

from dabench.tracking.store import Unanswered, open_client


@pytest.fixture
def hung(monkeypatch):
    """A listening socket that accepts and never answers: a hung server's port (reached directly)."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"http://u:hunter2@127.0.0.1:{server.getsockname()[1]}"


def test_open_client_names_a_server_that_does_not_answer_within_the_bound(hung):
    started = time.monotonic()
    with pytest.raises(Unanswered, match="does not answer .no answer within 1 s") as raised:
        open_client(hung, timeout_s=1)
    assert time.monotonic() - started < 5 and "hunter2" not in str(raised.value)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{free.getsockname()[1]}"  # nothing listens: refused at once
    with pytest.raises(Unanswered, match="refused"):
        open_client(closed)


@pytest.mark.parametrize("argv", [["report", "--out", "r"], ["ui", "--no-browser"]])
def test_a_command_on_a_hung_server_is_one_tracking_error_line(hung, argv, run_cli):
    done = run_cli(*argv, "--tracking-uri", hung, code=1, env={"MLFLOW_HTTP_REQUEST_TIMEOUT": "1"})
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "hunter2" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert f"dabench {argv[0]}: tracking_error: " in lines[0] and "no answer within 1 s" in lines[0], lines


def test_a_proxy_or_a_tls_handshake_leaves_the_answer_to_mlflow(hung, monkeypatch):
    """Behind a proxy the probe cannot see the server (MLflow's client goes through it)."""
    from dabench.tracking.store import http_silence

    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert http_silence(hung, 1) is None
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert "no answer within 1 s" in http_silence(hung, 1)


def test_a_run_on_a_hung_server_is_refused_in_one_line_within_its_bound(hung, run_cli):
    started = time.monotonic()
    done = run_cli("hardware.mode=predict", "tracking.timeout_s=1", code=2, env={"MLFLOW_TRACKING_URI": hung})
    (line,) = done.stderr.strip().splitlines()
    assert "does not answer (no answer within 1 s)" in line and "hunter2" not in line, line
    assert time.monotonic() - started < 20


def test_a_multirun_on_a_hung_server_keeps_its_runs_and_its_results_table(hung, run_cli, tmp_path):
    """One wait for the server, not MLflow's retries per call and run; the table from the jobs, its
    run names (the overrides) with the URI's password masked."""
    started = time.monotonic()
    done = run_cli("hardware.mode=predict", "run.batch_size=1,2", f"tracking.uri={hung}", "tracking.timeout_s=1", "-m")
    assert time.monotonic() - started < 30, done.stderr[-2000:]
    assert "their runs wait in the outbox" in done.stdout, done.stdout[-2000:]
    (table,) = tmp_path.glob("multirun/*/*/results.csv")
    assert len(table.read_text().strip().splitlines()) == 3  # header and 2 runs
    assert len(list((tmp_path / "mlruns-outbox").glob("*.json"))) == 3  # the parent and its 2 runs
    assert "hunter2" not in done.stdout + done.stderr + table.read_text()


def test_a_refused_uri_is_shown_with_its_password_masked(hung, run_cli):
    done = run_cli("hardware.mode=predict", f"tracking.uri={hung}/${{nosuch}}", code=2)
    assert "Interpolation key 'nosuch' not found" in done.stderr and "hunter2" not in done.stderr, done.stderr
