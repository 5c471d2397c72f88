"""The fault matrix of the commands around the run: every subcommand whose frame declaration
(cli/frame.py) writes a sink has a recipe (tests/reliability/recipes.py: COMMAND_RECIPES; EXEMPT
says why one has none). Each command runs once with every sink's fault point counting
(``write.<sink>:count``), which finds the writes it makes, all of them declared; then each of those
writes fails (its first and its last call; ENOSPC, EACCES, EIO) and the end state is checked as
for the run (test_fault_matrix.py): one line naming the cause, no traceback, a non-zero exit (a
cache only: exit 0), SQLite stores intact with no new RUNNING run (but the one whose end was the
failed write, named in that line), every file whole or absent, no temporary file left. Then the
same command without a fault gets the job done: nothing lost, nothing twice (a replayed journal
is in the store once). A new write of a command is covered without a new test; a new command
that writes needs one recipe."""

from __future__ import annotations

import errno
import importlib
import json
import os
import sqlite3
from pathlib import Path

import pytest

from dabench.cli.main import COMMANDS
from dabench.runtime import faults
from dabench.runtime.sinks import SINKS, TMP_MARK
from dabench.tracking.reaper import HOST_TAG, PID_TAG, hostname
from tests import forkserver
from tests.reliability import recipes

ERRNOS = ("ENOSPC", "EACCES", "EIO")
CACHES = ("calibration_cache", "schema_cache")
#: the commands this matrix must cover: every one whose declaration writes a sink
REQUIRED = {name for name, (module, _) in COMMANDS.items() if importlib.import_module(module).main.writes}
#: writes a declared sink brings along: a new local store copies the cached empty schema
ALONG = {"store": {"schema_cache"}}
SLOW = pytest.mark.slow
COUNT_ALL = ",".join(f"{s.point}:count" for s in SINKS.values())


def test_every_command_that_writes_has_a_recipe():
    assert REQUIRED - set(recipes.EXEMPT) == set(recipes.COMMAND_RECIPES) and set(recipes.EXEMPT) <= REQUIRED


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    db = tmp_path_factory.mktemp("command-template") / "mlflow.db"
    recipes.make_template(db)
    recipes.add_synthetic_runs(db)
    return db


def _folder(root: Path, template: Path) -> Path:
    root.mkdir(parents=True)
    recipes.prepare_folder(root, template)
    return root


@pytest.fixture
def env(monkeypatch):
    def enter(folder: Path) -> None:
        monkeypatch.chdir(folder)
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        monkeypatch.delenv(faults.ENV, raising=False)
        for key, value in recipes.environ(folder).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("DABENCH_CONSTANTS_DIR", str(folder / "constants"))

    return enter


def _running(db: Path) -> dict[str, dict[str, str]]:
    """RUNNING runs of the store: run id -> tags."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        ids = [r[0] for r in conn.execute("select run_uuid from runs where status = 'RUNNING'")]
        return {i: dict(conn.execute("select key, value from tags where run_uuid = ?", (i,)).fetchall()) for i in ids}


def _end_state(folder: Path, out: recipes.Outcome, running_before: dict[str, dict[str, str]]) -> None:
    """A run left RUNNING by the failed write (its end was that write) must be this live process's
    own, so that the reaper or ``dabench doctor`` ends it once the process is gone, or one that a
    journal still in the outbox finishes at the next sync."""
    finishing = {
        json.loads(p.read_text()).get("server_run_id") for p in (folder / "outbox").glob("*.json") if p.is_file()
    }
    for db in out.databases:
        if db.exists():
            assert recipes.integrity(db) == "ok", db
            for run_id, tags in _running(db).items():
                if run_id not in running_before and run_id not in finishing:
                    owner = (tags.get(HOST_TAG), tags.get(PID_TAG))
                    assert owner == (hostname(), str(os.getpid())), f"{db}: run {run_id} RUNNING, owner {owner}"
    for path in out.files:
        if path.exists() and TMP_MARK not in path.name:
            assert recipes.whole(path), path
    assert not list(folder.rglob(f"*{TMP_MARK}")), "a temporary file was left behind"


@pytest.mark.parametrize(
    "fault", [ERRNOS[0], *(pytest.param(e, marks=pytest.mark.slow) for e in ERRNOS[1:])]
)  # a full disk in the fast suite; the other errnos with the slow tests
@pytest.mark.parametrize(  # a report draws its figures once per write: with the slow tests
    "command", [pytest.param(c, marks=SLOW) if c == "report" else c for c in sorted(recipes.COMMAND_RECIPES)]
)
def test_every_write_of_a_command_fails_cleanly(command, fault, template, tmp_path, env):
    recipe = recipes.COMMAND_RECIPES[command]
    traced = _folder(tmp_path / "traced", template)
    env(traced)
    clean = recipe(traced, COUNT_ALL)
    writes = faults.counts()
    assert clean.status == "exit 0" and writes, (clean, writes)
    allowed = set(clean.declared).union(*(ALONG.get(sink, set()) for sink in clean.declared))
    assert {point.removeprefix("write.") for point in writes} <= allowed, (writes, clean.declared)
    cause = os.strerror(getattr(errno, fault))
    for point, calls in sorted(writes.items()):
        sink = point.removeprefix("write.")
        for nth in sorted({1, calls}):
            folder = _folder(tmp_path / f"{sink}-{nth}", template)
            env(folder)
            db = folder / "mlruns" / "mlflow.db"
            recipes.COMMAND_SETUP.get(command, lambda _: None)(folder)
            before = _running(db)
            out = recipe(folder, f"{point}:{fault}@{nth}")
            case = f"{command}: {point}:{fault}@{nth} of {calls}"
            _end_state(folder, out, before)
            if sink in CACHES:
                assert out.status == "exit 0", (case, out)
            else:
                assert out.status != "exit 0", (case, out)
                assert "\n" not in out.message and "Traceback" not in out.message, (case, out.message)
                assert cause in out.message, (case, out.message)
            again = recipe(folder, None)  # the next command, no fault: the job gets done
            assert again.status == "exit 0", (case, again)
            _end_state(folder, again, before)
            if command == "doctor":  # the run its gone process left RUNNING is ended now
                assert not set(_running(db)) & set(before), case
            if command == "sync":
                assert recipes.runs_named(db, "kept") == 1, case


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(recipes.COMMAND_RECIPES))
def test_killed_at_each_write_then_the_same_command(command, template, tmp_path, env):
    """SIGKILL half-way through the first call of each write the command makes (its own process),
    then the same command without a fault: it ends 0, stores intact, no RUNNING run left by the
    dead process (the reaper), files whole, the killed writer's temporary file gone where the
    next command wrote into its folder, a replayed journal in the store once."""
    recipe = recipes.COMMAND_RECIPES[command]
    traced = _folder(tmp_path / "traced", template)
    env(traced)
    assert recipe(traced, COUNT_ALL).status == "exit 0"
    for point in sorted(faults.counts()):
        folder = _folder(tmp_path / f"killed-{point}", template)
        env(folder)
        recipes.COMMAND_SETUP.get(command, lambda _: None)(folder)
        db = folder / "mlruns" / "mlflow.db"
        before = set(_running(db))
        child = {**os.environ, recipes.COMMAND_FAULT_ENV: f"{point}:kill@1"}
        child.pop(faults.ENV, None)
        argv = [f"command:{command}", str(folder)]
        done = forkserver.run(argv, recipes_root(), child, 300, module="tests.reliability.recipes")
        assert done.returncode == -9, (command, point, done.returncode, done.stderr[-2000:])
        again = recipe(folder, None)
        assert again.status == "exit 0" and "Traceback" not in again.message, (command, point, again)
        left = set(_running(db)) - before
        assert not left, f"{command} killed at {point}: RUNNING after the next command: {left}"
        for db_file in again.databases:
            if db_file.exists():
                assert recipes.integrity(db_file) == "ok"
        for path in again.files:
            if path.exists() and TMP_MARK not in path.name:
                assert recipes.whole(path), path
        for tmp in folder.rglob(f"*{TMP_MARK}"):  # kept only where no later write went into its folder
            target = tmp.parent / tmp.name[1 : -len(TMP_MARK)].rsplit(".", 2)[0]
            assert not target.exists(), f"{tmp}: the next write into {tmp.parent} should have removed it"
        if command == "sync":
            assert recipes.runs_named(db, "kept") == 1, point


def recipes_root() -> Path:
    return Path(__file__).resolve().parents[2]
