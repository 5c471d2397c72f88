"""Pre-flight: everything a run needs from its surroundings, checked before any work.

Each check returns a list of :class:`Problem` (empty when fine), each one line naming the field,
the value and the fix; :func:`refuse_if_unfit` runs them all for one run. Network probes are bounded
by ``tracking.timeout_s`` capped at :data:`PROBE_TIMEOUT_S`. What is checked (store, sinks, study
storage, memory and ranks of a run measured on this CPU): docs/reliability.md sections 4 and 5.
No mlflow, optuna or torch import here: pre-flight costs milliseconds.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dabench.core.paths import launch_dir
from dabench.core.platforms import on_host_cpu
from dabench.core.status import ConfigError
from dabench.host.cache import calibration_cache
from dabench.host.conditions import affinity
from dabench.host.info import meminfo_bytes
from dabench.perfmodel.knobs import knobs_for
from dabench.predictor import opgraph
from dabench.runtime.sinks import CACHE_ENV, sink
from dabench.tracking.outbox import is_remote, outbox_dir
from dabench.tracking.redact import redact_uri
from dabench.tracking.store import apply_client_timeouts, artifact_root, http_silence, schema_problem, sqlite_path
from dabench.tracking.store import tracking_uri as resolve

PROBE_TIMEOUT_S = 3.0  #: the longest one network probe may take
MIN_FREE_BYTES = 64 * 2**20  #: free space needed beside the artifacts and the store
RANK_OVERHEAD_BYTES = 300 * 2**20  #: one Python + torch process before any tensor (measured ~250 MiB)
#: database drivers a URI scheme needs: (modules any one of which will do, the pip extra)
DRIVERS = {
    "postgresql": (("psycopg", "psycopg2", "pg8000"), "pip install 'dabench[postgres]'"),
    "postgres": (("psycopg", "psycopg2", "pg8000"), "pip install 'dabench[postgres]'"),
    "mysql": (("pymysql", "MySQLdb", "mysql.connector"), "pip install pymysql"),
}
DEFAULT_PORTS = {"postgresql": 5432, "postgres": 5432, "mysql": 3306, "http": 80, "https": 443}


#: a Problem kind: the tracking server does not answer. A sweep's jobs then keep their records in
#: the outbox (dabench/tracking/outbox.py) instead of being refused; a single run is refused.
UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class Problem:
    """One refusal: ``field=value: fix``. ``kind`` is ``environment`` (store, disk: nothing can
    be recorded) or ``job`` (this configuration on this machine: memory, ranks)."""

    field: str
    value: Any
    fix: str
    kind: str = "environment"

    def __str__(self) -> str:
        return f"pre-flight: {self.field}={self.value!r}: {self.fix}"


def check_writable_dir(path: Path, field: str, shown: Any, min_free: int = MIN_FREE_BYTES) -> list[Problem]:
    """``path`` (a folder, maybe not yet created) can be created/written and has ``min_free``
    bytes free."""
    base = Path(path).absolute()
    while not base.exists() and base != base.parent:  # the nearest folder that exists
        base = base.parent
    if not base.is_dir():
        return [Problem(field, shown, f"{base} is not a folder; point {field} elsewhere")]
    try:  # a real probe: permission bits say nothing for root or a read-only mount
        with tempfile.TemporaryFile(dir=base, prefix=".dabench-preflight-"):
            pass
    except OSError as error:
        fix = f"{base} is not writable ({error.strerror or error}); make it writable or point {field} elsewhere"
        return [Problem(field, shown, fix)]
    free = shutil.disk_usage(base).free
    if free < min_free:
        fix = (
            f"only {free / 2**20:.1f} MiB free on {base} (need {min_free / 2**20:.0f} MiB); "
            f"free space or point {field} elsewhere"
        )
        return [Problem(field, shown, fix)]
    return []


def resolve_launch(path: Path | str) -> Path:
    """``path`` made absolute against the launch folder (not the Hydra job's working folder)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else launch_dir() / path


def check_path_shape(path: Path, field: str, shown: Any, want: str) -> list[Problem]:
    """``path`` (absolute) can be a ``want`` ("folder" or "file"): no existing part of it is a
    file where a folder is needed, no link on the way is dangling or (below the launch folder)
    leads out of it, a folder is not the file-system root, and what exists is of the right kind."""
    home = launch_dir().absolute()
    real_home = home.resolve()
    if want == "folder" and path.resolve() == Path(path.anchor or "/"):
        return [Problem(field, shown, f"{path} is the file-system root; point {field} at a folder of its own")]
    for part in (Path(*path.parts[: i + 1]) for i in range(1, len(path.parts))):
        if not os.path.lexists(part):
            break
        if part.is_symlink():
            target = Path(os.path.realpath(part))
            if not part.exists():
                return [Problem(field, shown, f"{part} is a link to {os.readlink(part)}, which does not exist; fix it")]
            if part.is_relative_to(home) and part != home and not target.is_relative_to(real_home):
                fix = f"{part} is a link out of the launch folder (to {target}); give that path to write there"
                return [Problem(field, shown, fix)]
        if (part != path or want == "folder") and not part.is_dir():
            return [Problem(field, shown, f"{part} is not a folder (a file); move it or point {field} elsewhere")]
    if path.exists():
        if want == "file" and path.is_dir():
            return [Problem(field, shown, f"{path} is a folder, not a file; point {field} at a file")]
        if want == "file" and not path.is_file():
            return [Problem(field, shown, f"{path} is not a regular file (a fifo or device); point {field} elsewhere")]
    return []


def check_sink(name: str, path: Path | str, field: str, shown: Any = None) -> list[Problem]:
    """The path of the sink ``name`` (dabench/runtime/sinks.py: a folder, or a file for ``file``
    and local ``store`` sinks) before any work: its shape (:func:`check_path_shape`), then its
    folder writable with space (:func:`check_writable_dir`), then an existing file writable."""
    want = "folder" if sink(name).kind == "folder" else "file"
    absolute = resolve_launch(path)
    shown = str(path) if shown is None else shown
    problems = check_path_shape(absolute, field, shown, want) or check_writable_dir(
        absolute if want == "folder" else absolute.parent, field, shown
    )
    if problems or want == "folder" or not absolute.exists():
        return problems
    try:  # appending nothing changes nothing, and fails as a write would
        with open(absolute, "ab"):
            pass
    except OSError as error:
        fix = f"{absolute} is not writable ({error.strerror}); fix it or point {field} elsewhere"
        return [Problem(field, shown, fix)]
    return []


#: command-line keys naming a folder dabench (through Hydra) writes into, and their sink
OUTPUT_DIR_KEYS = {"hydra.run.dir": "run_dir", "hydra.sweep.dir": "run_dir"}


def command_line_dirs(argv: list[str]) -> list[Problem]:
    """The output folders given on the command line (``hydra.run.dir=...``, ``hydra.sweep.dir=...``),
    checked before Hydra creates them (an interpolated value is checked by the run's pre-flight)."""
    problems: list[Problem] = []
    for word in argv:
        key, eq, value = word.lstrip("+").partition("=")
        if eq and key in OUTPUT_DIR_KEYS and value and "${" not in value:
            problems += check_sink(OUTPUT_DIR_KEYS[key], value.strip("'\""), key)
    return problems


def _scheme(uri: str) -> str:
    return uri.split(":", 1)[0].split("+", 1)[0].lower() if ":" in uri else "file"


def check_driver(uri: str, field: str, shown: str) -> list[Problem]:
    """The Python database driver a ``postgresql://`` or ``mysql://`` URI (a scheme of
    :data:`DRIVERS`) needs is installed."""
    scheme = _scheme(uri)
    modules, hint = DRIVERS[scheme]
    explicit = uri.split(":", 1)[0].split("+", 1)[1] if "+" in uri.split(":", 1)[0] else None
    wanted = (explicit,) if explicit else modules
    if any(importlib.util.find_spec(m.split(".")[0]) is not None for m in wanted):
        return []
    return [Problem(field, shown, f"the {scheme} driver ({' or '.join(wanted)}) is not installed: {hint}")]


def check_reachable(uri: str, field: str, shown: str, timeout_s: float) -> list[Problem]:
    """A server URI's host accepts a TCP connection within ``timeout_s``."""
    parts = urlsplit(uri)
    host = parts.hostname
    if not host:
        return []  # a unix socket or a driver default: the driver decides
    try:
        port = parts.port or DEFAULT_PORTS.get(_scheme(uri), 0)
    except ValueError:
        return [Problem(field, shown, "the port is not a number")]
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return []
    except OSError as error:
        fix = (
            f"{host}:{port} is not reachable ({error.strerror or error}); "
            "start the server, fix the address, or unset it to use the local SQLite store"
        )
        return [Problem(field, shown, fix, kind=UNREACHABLE)]


def check_answers(uri: str, field: str, shown: str, timeout_s: float) -> list[Problem]:
    """An ``http(s)://`` server that accepts connections also answers a request within ``timeout_s``."""
    silence = http_silence(uri, timeout_s)
    if not silence:
        return []
    fix = f"the server does not answer ({silence}); restart it, fix the address, or unset it for the local store"
    return [Problem(field, shown, fix, kind=UNREACHABLE)]


def check_sqlite(path: Path, field: str, shown: str, timeout_s: float) -> list[Problem]:
    """A SQLite file's path is fit (:func:`check_sink`), and an existing file is a readable database."""
    problems = check_sink("store", path, field, shown)
    if problems or not path.exists():
        return problems
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout_s) as conn:
            conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as error:
        if "locked" in str(error):
            return []  # busy, not broken: writers retry
        fix = (
            f"{path} is not a usable database ({error}); "
            "move it aside (python -m dabench doctor can check it) or use another store"
        )
        return [Problem(field, shown, fix)]
    problem = schema_problem(path, shown)
    return [Problem(field, shown, problem)] if problem else []


def check_store(uri: str, field: str, timeout_s: float) -> list[Problem]:
    """Any store URI dabench accepts (MLflow tracking or Optuna storage)."""
    shown = redact_uri(uri)
    timeout = min(timeout_s, PROBE_TIMEOUT_S)
    scheme = _scheme(uri)
    if scheme == "sqlite":
        path = sqlite_path(uri)
        return [] if path is None else check_sqlite(resolve_launch(path), field, shown, timeout)
    if scheme in DRIVERS:
        return check_driver(uri, field, shown) or check_reachable(uri, field, shown, timeout)
    if scheme in ("http", "https"):  # connected at once, then an HTTP answer within the store's own bound
        return check_reachable(uri, field, shown, timeout) or check_answers(uri, field, shown, timeout_s)
    if scheme == "file":
        local = Path(urlsplit(uri).path if uri.startswith("file:") else uri)
        return check_sink("artifacts", local, field, shown)
    return []  # databricks and other plugins: their client decides


def check_parent_store(rc, uri: str) -> list[Problem]:
    """A study's trial (``tracking.parent_run_id`` set by the sweeper) whose tracking store is a
    SQLite file that does not exist here runs on a machine that cannot see the driver's disk:
    recording it would create a new store nobody reads (an orphan). Refused, with the fix."""
    if not getattr(rc.tracking, "parent_run_id", None) or _scheme(uri) != "sqlite":
        return []
    path = sqlite_path(uri)
    if path is None or path.exists():
        return []
    fix = (
        f"this study's store {path} is not on this machine ({os.uname().nodename}); a trial on "
        f"another machine needs a tracking server: tracking.uri=http://<host>:5000 (docs/scale-out.md)"
    )
    return [Problem("tracking.uri", redact_uri(uri), fix)]


def check_study_storage(
    url: str | None, timeout_s: float = PROBE_TIMEOUT_S, field: str = "hydra.sweeper.storage"
) -> list[Problem]:
    """An Optuna storage URL opens (for the tuner, before it touches the study): SQLite folder
    writable and file readable, driver installed, server reachable. None = in-memory: fine."""
    return [] if not url else check_store(url, field, timeout_s)


def cpu_cores() -> int:
    """CPU cores this process may run on."""
    return len(affinity())


def is_measured_on_cpu(rc) -> bool:
    """Does this run execute on this machine's CPU (not predicted, not on a device)?"""
    return rc.hardware.mode != "predict" and on_host_cpu(rc.hardware.backend)


def check_memory(rc, available: int | None = None) -> list[Problem]:
    """A measured CPU run's estimate fits in ``MemAvailable``."""
    if not is_measured_on_cpu(rc):
        return []
    available = meminfo_bytes("MemAvailable") if available is None else available
    if available is None:
        return []
    # the host memory a measured training run needs (derivation: docs/reliability.md section 4)
    graph = opgraph(rc)  # the run's own, cached
    ranks = rc.parallel.n_chips if rc.parallel.strategy != "none" else 1
    needed = rc.data_copies * (graph.training_state_bytes() + graph.saved_bytes) + ranks * RANK_OVERHEAD_BYTES
    if needed <= available:
        return []
    if ranks * RANK_OVERHEAD_BYTES > needed / 2:  # mostly processes, not the model: fewer ranks
        fix = (
            f"{ranks} rank processes need ~{needed / 2**30:,.1f} GiB ({RANK_OVERHEAD_BYTES / 2**20:.0f} MiB "
            f"each before any tensor), {available / 2**30:,.1f} GiB is available; use fewer ranks"
        )
        return [Problem("parallel.degree", rc.parallel.degree, fix, kind="job")]
    fix = (
        f"a measured CPU run needs ~{needed / 2**30:,.1f} GiB (weights, gradients, AdamW state and "
        f"activations of model={rc.model.name} at run.batch_size={rc.run.batch_size}), "
        f"{available / 2**30:,.1f} GiB is available; use a smaller model or batch, or hardware.mode=predict"
    )
    return [Problem("model.hidden_size", rc.model.hidden_size, fix, kind="job")]


def check_ranks(rc, cores: int | None = None) -> list[Problem]:
    """A measured parallel CPU run starts no more ranks than there are cores."""
    if not is_measured_on_cpu(rc) or rc.parallel.strategy == "none":
        return []
    cores = cpu_cores() if cores is None else cores
    ranks = rc.parallel.n_chips
    if ranks <= cores or rc.run.allow_oversubscribe:
        return []
    fix = (
        f"{ranks} ranks on {cores} CPU cores; use parallel.degree<={cores}, "
        "or run.allow_oversubscribe=true to run them anyway"
    )
    return [Problem("parallel.degree", rc.parallel.degree, fix, kind="job")]


def environment_problems(rc) -> list[Problem]:
    """The surroundings of a run: the tracking store (when tracking is on), its artifact root
    and the run folder (cwd)."""
    problems: list[Problem] = []
    timeout_s = float(getattr(rc.tracking, "timeout_s", None) or PROBE_TIMEOUT_S)
    if rc.tracking.enabled:
        # the URI as tracking_uri resolves it, without creating the default store folder (pre-flight writes nothing)
        configured = rc.tracking.uri or os.environ.get("MLFLOW_TRACKING_URI")
        uri = resolve(rc.tracking.uri) if configured else f"sqlite:///{launch_dir() / 'mlruns' / 'mlflow.db'}"
        problems += check_store(uri, "tracking.uri", timeout_s) + check_parent_store(rc, uri)
        root = artifact_root(uri)
        if not problems and root and root.startswith("file:"):
            problems += check_sink("artifacts", Path(urlsplit(root).path), "tracking.uri", shown=f"artifacts at {root}")
        if not problems and is_remote(uri):  # where its records wait if the server goes away
            problems += check_sink("outbox", outbox_dir(), "$DABENCH_OUTBOX")
    problems += check_sink("run_dir", Path.cwd(), "hydra.run.dir")
    if is_measured_on_cpu(rc):  # this CPU's calibration is read and written
        problems += check_sink("calibration_cache", calibration_cache(), f"${CACHE_ENV}")
    return problems


def job_problems(rc) -> list[Problem]:
    """This configuration on this machine: ranks against cores, then (when they fit, or the user
    allowed more) memory against MemAvailable."""
    return check_ranks(rc) or check_memory(rc)


def refuse_if_unfit(rc, multirun: bool, unfit: list[Problem]) -> None:
    """The Hydra task's pre-flight: bound the tracking client by ``tracking.timeout_s``, then
    :func:`refuse` on the run's surroundings and ``unfit`` (its :func:`job_problems`).
    Inside a multirun only the surroundings are checked here (a broken store fails every job);
    a job this machine cannot run is recorded ``invalid_config`` by the pipeline and the sweep
    goes on (:func:`job_problems`, called from :func:`dabench.pipeline.job.execute_job`)."""
    apply_client_timeouts(getattr(rc.tracking, "timeout_s", None))  # every later store call is bounded
    problems = environment_problems(rc)
    if multirun:  # the store went away mid-sweep: the job runs, its record waits in the outbox
        problems = [problem for problem in problems if problem.kind != UNREACHABLE]
    else:
        problems += unfit
    refuse(problems)


def refuse(problems: list[Problem]) -> None:
    """Print each of ``problems`` on one line and exit with status 2; nothing when there are none."""
    if problems:
        print(format_problems(problems), file=sys.stderr, flush=True)
        raise SystemExit(2)


def model_inputs_error(rc) -> Any:
    """The ConfigError of the model inputs a config names beyond its typed sections, or None:
    ``hardware.options`` (each knob's type and range, platforms/<family>/knobs.py) and the constant set
    ``hardware.constants`` (read and checked: perfmodel/constants.ConstantSet). Checked when a job is prepared,
    before a run opens."""
    try:
        knobs_for(rc.hardware)
    except ConfigError as error:  # an arch without knobs has no model to feed: the predictor says so if asked
        return None if error.field == "hardware.arch" else error
    except ImportError:  # an arch name that is no module name (the same: no model for it)
        pass
    return None


def format_problems(problems: list[Problem]) -> str:
    return "\n".join(f"dabench: {problem}" for problem in problems)
