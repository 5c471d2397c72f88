"""Every place dabench writes (:data:`SINKS`), and the one set of functions that write there.

Files are replaced whole (a temporary file, then ``os.replace``); each write passes the fault point
``write.<sink>`` half-way (dabench/runtime/faults.py); errors are :class:`SinkError`, one line
naming the sink, the path and the cause. Writes that are no sink are listed in
tests/reliability/test_write_sites.py. docs/reliability.md, "Sinks and the fault matrix"."""

from __future__ import annotations

import errno as _errno
import itertools
import json
import os
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator

from dabench.runtime import faults
from dabench.runtime.pids import pid_alive

TMP_MARK = ".dabench-tmp"  #: in the name of a file being written (``.<name>.<pid>.<n>.dabench-tmp``)


@dataclass(frozen=True)
class Sink:
    """One place dabench writes: ``kind`` is ``folder``, ``file`` or ``store`` (a library writes it)."""

    name: str
    kind: str
    what: str
    setting: str

    @property
    def point(self) -> str:
        return f"write.{self.name}"


#: every sink, by name (a new sink is one entry here; the fault matrix picks it up)
SINKS: dict[str, Sink] = {
    s.name: s
    for s in (
        Sink("store", "store", "the MLflow tracking store: runs, params, metrics, tags", "tracking.uri"),
        Sink("artifacts", "folder", "the MLflow artifact root: each run's files", "tracking.uri (its artifact root)"),
        Sink(
            "run_dir",
            "folder",
            "a run's or sweep's folder: config.yaml, result.json, subtasks.csv, roofline.svg, .hydra/, study files",
            "hydra.run.dir, hydra.sweep.dir",
        ),
        Sink(
            "results_csv", "file", "a sweep's or grid's results.csv", "hydra.sweep.dir; ./multirun/<date>/<time>-grid"
        ),
        Sink(
            "calibration_cache",
            "file",
            "this CPU's measured ceilings and its validate runs' errors",
            "$DABENCH_CACHE_DIR/calibration.json, validation.json",
        ),
        Sink(
            "schema_cache",
            "file",
            "the empty MLflow schema a new local store is copied from",
            "$DABENCH_CACHE_DIR/mlflow-schema/",
        ),
        Sink("outbox", "folder", "run records kept while the tracking server is unreachable", "$DABENCH_OUTBOX"),
        Sink(
            "study_storage",
            "store",
            "Optuna study storage (the default SQLite file's folder, its lock files)",
            "hydra.sweeper.storage",
        ),
        Sink(
            "exports",
            "file",
            "tables and pages a command writes on request: advice.csv, compare --csv, report --out, study plots",
            "the command's path option",
        ),
        Sink(
            "source_tree",
            "file",
            "developer outputs in the source tree: fitted constant sets, residuals, generated doc blocks",
            "dabench fit --write, dabench docs --write",
        ),
    )
}

CACHE_ENV = "DABENCH_CACHE_DIR"  #: the folder of dabench's caches (default ~/.cache/dabench)


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "dabench")


def calibration_cache_path() -> Path:
    return cache_dir() / "calibration.json"


#: what to do about an unusable location, by errno
_FIXES = {
    **dict.fromkeys((_errno.ENOTDIR, _errno.EEXIST, _errno.EISDIR), "a file stands where a folder should be"),
    **dict.fromkeys((_errno.EACCES, _errno.EPERM, _errno.EROFS), "no permission to write there"),
    **dict.fromkeys((_errno.ENOSPC, _errno.EDQUOT), "no space left there: free some"),
}


class SinkError(OSError):
    """A write to a sink failed: one line naming the sink, the path, the cause (errno kept) and,
    for an unusable location, what to do."""

    def __init__(self, sink: str, path: Path | str, error: OSError):
        code = error.errno if error.errno is not None else _errno.EIO
        cause = error.strerror or str(error)
        name = _errno.errorcode.get(code, str(code))
        fix = f"; {_FIXES[code]}, or choose another place ({SINKS[sink].setting})" if code in _FIXES else ""
        super().__init__(code, f"cannot write {sink} at {path}: {cause} ({name}){fix}", str(path))
        self.sink = sink

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def sink(name: str) -> Sink:
    """The registered sink ``name`` (KeyError naming the registered ones otherwise)."""
    try:
        return SINKS[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a registered sink ({', '.join(SINKS)})") from None


def fault_point(name: str, path: Path | str | None = None) -> None:
    """The fault point of a sink a library writes, called just before dabench calls the library."""
    try:
        faults.check(sink(name).point, path)
    except OSError as error:
        raise SinkError(name, path or sink(name).setting, error) from error


_counter = itertools.count(1)  #: numbers this process's temporary files


def _remove_stale(folder: Path) -> None:
    """Temporary files in ``folder`` left by writers that were killed (their pid is gone)."""
    try:
        leftovers = list(folder.glob(f".*{TMP_MARK}"))
    except OSError:
        return
    for tmp in leftovers:
        parts = tmp.name[: -len(TMP_MARK)].rsplit(".", 2)
        if len(parts) == 3 and parts[1].isdigit() and not pid_alive(int(parts[1])):
            with suppress(OSError):
                tmp.unlink()


def write_bytes(name: str, path: Path | str, data: bytes, mode: int = 0o666) -> Path:
    """Write ``data`` to ``path`` of the sink ``name`` atomically; on any error the target is
    unchanged and :class:`SinkError` raised."""
    point = sink(name).point
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_counter)}{TMP_MARK}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(path.parent)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with os.fdopen(fd, "wb") as handle:
                half = len(data) // 2
                handle.write(data[:half])
                handle.flush()
                faults.check(point, path)
                handle.write(data[half:])
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with suppress(OSError):
                tmp.unlink()
            raise
    except OSError as error:
        raise SinkError(name, path, error) from error
    return path


def write_text(name: str, path: Path | str, text: str, encoding: str = "utf-8") -> Path:
    return write_bytes(name, path, text.encode(encoding))


def write_json(name: str, path: Path | str, data: Any, **dumps: Any) -> Path:
    """:func:`write_text` of ``json.dumps(data, **dumps)`` and a newline."""
    return write_text(name, path, json.dumps(data, **dumps) + "\n")


#: a spreadsheet reads a text cell that starts with one of these as a formula (OWASP, "CSV Injection")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows as it is: a text that would start a formula gets
    a leading ``'`` (numbers, and text that reads as a number, are left as they are)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def write_csv(name: str, path: Path | str, frame: Any, **to_csv: Any) -> Path:
    """:func:`write_text` of a pandas frame's CSV (``frame.to_csv(**to_csv)``), each cell and
    row label through :func:`cell`."""
    frame = frame.map(cell).rename(index=cell)
    return write_text(name, path, frame.to_csv(**to_csv))


def make_dir(name: str, path: Path | str, exist_ok: bool = True) -> Path:
    """Create the folder ``path`` (and its parents) of the sink ``name``; raises :class:`SinkError`."""
    path = Path(path)
    try:
        faults.check(sink(name).point, path)
        path.mkdir(parents=True, exist_ok=exist_ok)
    except FileExistsError:
        raise
    except OSError as error:
        raise SinkError(name, path, error) from error
    return path


def copy_file(name: str, source: Path | str, target: Path | str) -> Path:
    """Copy one file into the sink ``name`` atomically, its permission bits kept."""
    source = Path(source)
    return write_bytes(name, target, source.read_bytes(), mode=source.stat().st_mode & 0o777)


def copy_tree(name: str, source: Path | str, target: Path | str) -> Path:
    """Copy the folder ``source`` into ``target``, each file through :func:`copy_file`."""
    source, target = Path(source), Path(target)
    make_dir(name, target)
    for folder, dirs, files in os.walk(source):
        here = target / Path(folder).relative_to(source)
        for d in dirs:
            make_dir(name, here / d)
        for f in files:
            copy_file(name, Path(folder) / f, here / f)
    return target


@contextmanager
def locked(name: str, path: Path | str, timeout_s: float = 120.0, on_wait: Any = None) -> Iterator[None]:
    """Hold ``<path>.lock`` of the sink ``name`` exclusively (``flock``) for the block: writers of
    ``path`` that meet take turns instead of losing each other's changes, and a killed holder
    releases it. ``on_wait()`` once if it has to wait; TimeoutError naming the lock when another
    process holds it past ``timeout_s``; SinkError when it cannot be made."""
    import fcntl

    lock = Path(path).with_name(Path(path).name + ".lock")
    make_dir(name, lock.parent)
    with open_stream(name, lock) as handle:
        deadline, delay = time.monotonic() + timeout_s, 0.01
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{lock} is held by another process after {timeout_s:g} s") from None
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                time.sleep(delay)
                delay = min(0.2, delay * 2)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def open_stream(name: str, path: Path | str, mode: str = "a") -> IO:
    """Open ``path`` of the sink ``name`` for appending or as a lock file (not replaced whole)."""
    path = Path(path)
    try:
        faults.check(sink(name).point, path)
        return open(path, mode)
    except OSError as error:
        raise SinkError(name, path, error) from error


def move(name: str, source: Path | str, target: Path | str) -> Path:
    """Rename ``source`` to ``target`` within the sink ``name`` (atomic on one file system)."""
    target = Path(target)
    try:
        faults.check(sink(name).point, target)
        os.replace(source, target)
    except OSError as error:
        raise SinkError(name, target, error) from error
    return target


def one_line(error: BaseException) -> str:
    """An error as one line: a :class:`SinkError` says sink, path and cause; others their type."""
    if isinstance(error, SinkError):
        return str(error)
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
