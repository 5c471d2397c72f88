"""``dabench ui [--port N] [--host H] [--no-browser] [--tracking-uri URI] [--experiment NAME]``:
open dabench's runs in MLflow's UI in one command.

For the store dabench would use (tracking/store.py), it starts ``mlflow server`` (one worker, on
127.0.0.1 by default), waits until it answers, prints the URL of the experiment's runs table in the
model-training view with the saved view ``dabench`` (key columns; tracking/ui_view.py) as the first
line of standard output, opens a browser where there is a display, and serves until Ctrl-C or
SIGTERM, then stops the server. When the store already is a tracking server (``http(s)://``), it
prints that server's URL and starts nothing. Exit status: 0 served or printed, 1 the server failed,
2 bad input (a port in use, an unknown experiment name in a store that has experiments).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import INT, NUMBER, TEXT
from dabench.core.status import CrashedError, DabenchError, Status
from dabench.runtime.quiet import is_verbose
from dabench.tracking.naming import MAX_EXPERIMENT_CHARS
from dabench.tracking.redact import redact_uri
from dabench.tracking.store import Unanswered, artifact_root, open_client, seed, sqlite_path, store_lock, tracking_uri
from dabench.tracking.ui_view import DEFAULT_HOST, DEFAULT_PORT, ensure_saved_view, runs_view_url, ui_base_url

START_TIMEOUT_S = 180.0  #: mlflow server takes ~10 s on a quiet machine, a minute on 2 busy cores
STOP_GRACE_S = 10.0


class UiError(DabenchError, status=Status.INVALID_CONFIG):
    """Bad input, one line for the user (exit 2); a server that fails is a CrashedError (exit 1)."""


def _remote(addresses: list[str]) -> list[str]:
    return [a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_loopback]


def check_host(host: str, allow_remote: bool) -> list[str]:
    """The addresses ``host`` serves on; UiError (exit 2) when it names none, or one is not a
    loopback address and ``--allow-remote`` was not given."""
    try:
        found = socket.getaddrinfo(host or None, None, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as error:
        raise UiError(f"--host={host}: not an address this machine can serve on ({error})") from None
    addresses = sorted({str(info[4][0]) for info in found})
    remote = _remote(addresses)
    if remote and not allow_remote:
        raise UiError(
            f"--host={host}: serves on {', '.join(remote)}, reachable from other machines, and MLflow's UI has no "
            f"authentication; add --allow-remote to serve there anyway (default {DEFAULT_HOST}: this machine only)"
        )
    return addresses


def remote_warning(host: str, port: int, addresses: list[str]) -> str | None:
    """The warning printed when the UI is served beyond this machine (None when it is not)."""
    remote = _remote(addresses)
    if not remote:
        return None
    where = ", ".join(
        f"{'every interface' if ipaddress.ip_address(a.split('%')[0]).is_unspecified else a} port {port}"
        for a in remote
    )
    return (
        f"dabench ui: WARNING: --host={host} serves on {where}: anyone who can reach this machine can read, "
        "change and delete these runs (MLflow's UI has no authentication)"
    )


def free_port(host: str, port: int) -> int:
    """``port`` if it can be bound on ``host`` (0: a free port the system picks); else UiError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise UiError(
                f"--port={port}: cannot serve on {host}:{port} ({error.strerror}); "
                "pick another with --port N, or --port 0 for a free one"
            ) from None
        return int(probe.getsockname()[1])


def view_url(uri: str, base: str, experiment: str) -> str:
    """The URL to open: the experiment's runs view after writing the saved view onto it; the
    experiment list (``base/``) while the store has no such experiment and no other."""
    with store_lock(uri):  # a new SQLite store gets its schema here, once
        seed(sqlite_path(uri))
        client = open_client(uri)
        found = client.get_experiment_by_name(experiment)
        if found is None:
            names = [e.name for e in client.search_experiments(max_results=1000) if e.name != "Default"]
            if names:
                raise UiError(
                    f"--experiment={experiment!r}: not in {redact_uri(uri)}; experiments: {', '.join(sorted(names))}"
                )
            print(
                f"dabench ui: no runs in {redact_uri(uri)} yet (run `python -m dabench` first); "
                "opening the experiment list",
                file=sys.stderr,
            )
            return f"{base}/"
        ensure_saved_view(client, found.experiment_id, found.tags)
    return runs_view_url(base, found.experiment_id)


def server_command(uri: str, host: str, port: int) -> list[str]:
    """``mlflow server`` for ``uri`` with one worker; local artifacts where dabench writes them."""
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", host]
    command += ["--port", str(port), "--workers", "1"]
    artifacts = artifact_root(uri)
    return command + (["--artifacts-destination", artifacts] if artifacts else [])


def wait_until_up(process: subprocess.Popen, url: str, timeout_s: float, log: Path | None) -> None:
    """Poll ``url/health`` until it answers 200; CrashedError when the server exits or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CrashedError(f"mlflow server exited with status {process.returncode} before answering{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise CrashedError(f"mlflow server did not answer at {url} within --timeout-s={timeout_s:g}{_tail(log)}")


def _tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-8:]
    return f" (server log {log}):\n  " + "\n  ".join(lines) if lines else f" (server log {log} is empty)"


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, SIGKILL after :data:`STOP_GRACE_S`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(process.pid, sig)
            process.wait(timeout=STOP_GRACE_S)


def open_browser(url: str) -> bool:
    """Open ``url`` where a graphical browser can be (macOS, Windows, or a Linux display); never a
    text browser in this terminal."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    import webbrowser

    try:
        return bool(webbrowser.open(url, new=2))
    except Exception:
        return False


def serve(args: argparse.Namespace, uri: str) -> int:
    addresses = check_host(args.host, args.allow_remote)
    port = free_port(args.host, args.port)
    browse = DEFAULT_HOST if args.host in ("0.0.0.0", "::", "") else args.host  # what a browser here opens
    base = f"http://{f'[{browse}]' if ':' in browse else browse}:{port}"
    url = view_url(uri, base, args.experiment)

    log = None if is_verbose() else Path(tempfile.mkstemp(prefix="dabench-ui-", suffix=".log")[1])
    out = None if log is None else open(log, "w")
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops it as Ctrl-C does
    process = subprocess.Popen(
        server_command(uri, args.host, port),
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},  # no job runner for browsing
        stdout=out,
        stderr=out,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until_up(process, base, args.timeout_s, log)
        print(url, flush=True)
        where = f" (server log {log})" if log else ""
        bound = ", ".join(f"{'[' + a + ']' if ':' in a else a}:{port}" for a in addresses)
        print(
            f"dabench ui: MLflow serves {redact_uri(uri)} on {bound} (open {base}){where}; Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        warning = remote_warning(args.host, port, addresses)
        if warning:
            print(warning, file=sys.stderr, flush=True)
        if not args.no_browser and open_browser(url):
            print("dabench ui: opened in your browser", file=sys.stderr, flush=True)
        code = process.wait()
        raise CrashedError(f"mlflow server exited with status {code}{_tail(log)}")
    except KeyboardInterrupt:  # the server is stopped below before the command returns
        print("dabench ui: stopped", file=sys.stderr)
        if log is not None:
            log.unlink(missing_ok=True)  # kept only when the server failed (the message names it)
        return 0
    finally:
        stop(process)
        signal.signal(signal.SIGTERM, previous)
        if out is not None:
            out.close()


@command(
    "ui",
    __doc__.split("\n\n")[1],
    {
        "--port": arg(INT, "port to serve on (0 picks a free one)", DEFAULT_PORT, low=0, high=65535),
        "--host": arg(TEXT, f"address to serve on ({DEFAULT_HOST}: this machine only)", DEFAULT_HOST),
        "--allow-remote": flag("serve on a --host other machines can reach; MLflow's UI has no authentication"),
        "--no-browser": flag("print the URL, do not open a browser"),
        "--tracking-uri": arg(TEXT, "MLflow store (default: $MLFLOW_TRACKING_URI, else sqlite:///./mlruns/mlflow.db)"),
        "--experiment": arg(TEXT, "experiment to open", "dabench", max_len=MAX_EXPERIMENT_CHARS),
        "--timeout-s": arg(
            NUMBER, "seconds to wait for the server to answer", START_TIMEOUT_S, low=0, low_open=True, high=86400
        ),
    },
    writes={"store": True},  # the saved view (tracking/ui_view.py)
    epilog="-v (dabench -v ui) shows the MLflow server's own log",
)
def main(args) -> int:
    uri = tracking_uri(args.tracking_uri)
    if not uri.startswith(("http://", "https://")):
        return serve(args, uri)
    base = ui_base_url(uri, environ={})  # a tracking server: its UI is already there
    try:
        url = view_url(uri, base, args.experiment)
    except UiError:
        raise
    except Exception as error:  # the server does not answer, or refuses the request
        said = f"--tracking-uri={redact_uri(uri)}: the tracking server does not answer ({type(error).__name__})"
        said = str(error) if isinstance(error, Unanswered) else said
        raise Unanswered(f"{said}; start it, or unset it to serve the local store") from None
    print(url, flush=True)
    print(f"dabench ui: the store is the tracking server {base}; nothing to start", file=sys.stderr)
    if not args.no_browser:
        open_browser(url)
    return 0
