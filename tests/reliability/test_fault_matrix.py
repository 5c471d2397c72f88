"""The fault-injection matrix: every registered sink (dabench/runtime/sinks.py: SINKS, not a hand
list) x {disk full, permission denied, I/O error, killed mid-write}. Guarantee and limits:
docs/reliability.md, "Sinks and the fault matrix".

Each case runs the sink's recipe (tests/reliability/recipes.py: the command path that writes it)
with ``$DABENCH_FAULT=write.<sink>:<fault>`` and then checks: every SQLite store passes
``PRAGMA integrity_check``; every file the sink writes is whole (parses) or absent; the user was
told in one line (no traceback) naming the cause; a run that exists carries a status and reason
and is not RUNNING. The killed cases run the recipe in a subprocess that SIGKILLs itself half-way
through the write, then run the next command (the same recipe, no fault) and check the same, with
no RUNNING run or trial left (the reaper, the study's stale-trial check) and the killed writer's
temporary file gone.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from dabench.runtime import faults
from dabench.runtime.sinks import SINKS, TMP_MARK
from tests import forkserver
from tests.reliability import recipes

ERRNOS = ("ENOSPC", "EACCES", "EIO")
REPO = Path(__file__).resolve().parents[2]
RECIPES = "tests.reliability.recipes"  #: run as ``python -m``: ``SINK FOLDER [SINK FOLDER ...]``
#: the store fails at its 4th write, the run's record (1-2: its folder and lock file, 3: the run
#: created): a run exists and must end with the status and reason; every other sink fails at every write
AT = {"store": "@4"}
#: sinks whose killed write leaves a run (or a trial) open
LEFT_RUNNING = ("store", "artifacts", "run_dir", "study_storage")
#: where the killed cases die: a write of data, not a folder (study storage: the trial's tell,
#: after open_study's check, the lock's folder and file); else at the first write
KILL_AT = {"store": "@4", "run_dir": "@2", "outbox": "@2", "study_storage": "@4"}
#: sinks that only save time: a failed write leaves the run ok
CACHES = ("calibration_cache", "schema_cache")
#: the status a failed write gives a recorded run
WRITE_STATUS = {"ENOSPC": "disk_full", "EACCES": "tracking_error", "EIO": "tracking_error"}


def test_every_sink_has_a_recipe():
    """A sink registered without a recipe (or a recipe without its sink) fails here, named."""
    assert set(recipes.RECIPES) == set(SINKS), (
        f"sinks without a recipe: {sorted(set(SINKS) - set(recipes.RECIPES))}; "
        f"recipes without a sink: {sorted(set(recipes.RECIPES) - set(SINKS))}"
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    folder = tmp_path_factory.mktemp("template")
    ids = recipes.make_template(folder / "mlflow.db")
    return folder / "mlflow.db", ids


@pytest.fixture
def case(tmp_path, template, monkeypatch):
    db, ids = template
    recipes.prepare_folder(tmp_path, db)
    (tmp_path / "template_ids.json").write_text(json.dumps(ids))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv(faults.ENV, raising=False)
    for key, value in recipes.environ(tmp_path).items():
        monkeypatch.setenv(key, value)
    faults._calls.clear()
    return tmp_path


def consistent(folder: Path, out: recipes.Outcome) -> None:
    """The end state every case must leave (see the module docstring)."""
    for db in out.databases:
        if db.exists():
            assert recipes.integrity(db) == "ok", db
    for path in out.files:
        if path.exists():
            assert recipes.whole(path), path
    for run_id in out.run_ids:
        state, status, reason = recipes.run_status(folder / "mlruns" / "mlflow.db", run_id)
        assert state != "RUNNING" and status and (status == "ok" or reason is not None), (state, status, reason)


@pytest.mark.parametrize("fault", ERRNOS)
@pytest.mark.parametrize("sink", list(SINKS))
def test_a_failed_write_leaves_a_consistent_state_and_one_line(sink, fault, case, monkeypatch):
    monkeypatch.setenv(faults.ENV, f"{SINKS[sink].point}:{fault}{AT.get(sink, '')}")
    out = recipes.RECIPES[sink](case)
    consistent(case, out)
    cause = os.strerror(getattr(errno, fault))
    assert "\n" not in out.message and "Traceback" not in out.message, out.message
    assert cause in out.message and fault in out.message, (sink, out.message)
    assert not list(case.rglob(f"*{TMP_MARK}")), "a temporary file was left behind"
    if sink in ("store", "artifacts", "run_dir"):
        assert out.run_ids, "the recorded run is missing"
    if out.run_ids and sink not in CACHES:  # a run exists: it says why it is not ok
        _, status, reason = recipes.run_status(case / "mlruns" / "mlflow.db", out.run_ids[0])
        assert status == WRITE_STATUS[fault] and cause in reason, (status, reason)
    if sink in CACHES:
        assert out.status == "ok"  # the run goes on without the cache; only the cache was not kept
    else:
        assert out.status not in ("ok", "exit 0"), out


def _environ(folder: Path, fault: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (faults.ENV, "MLFLOW_TRACKING_URI")}
    env.update(recipes.environ(folder))
    if fault:
        env[faults.ENV] = fault
    return env


@pytest.fixture(scope="module")
def killed(tmp_path_factory, template):
    """Every sink's recipe killed half-way through a write (one process each, a fork of the tests'
    warm server: tests/forkserver.py), then the next command for all of them (one process):
    {sink: (folder, killed process, next result)}."""
    db, ids = template
    folders = {sink: tmp_path_factory.mktemp(f"killed-{sink}") for sink in SINKS}
    dead = {}
    for sink, folder in folders.items():
        recipes.prepare_folder(folder, db)
        (folder / "template_ids.json").write_text(json.dumps(ids))
        fault = f"{SINKS[sink].point}:kill{KILL_AT.get(sink, '@1')}"
        done = forkserver.run([sink, str(folder)], REPO, _environ(folder, fault), 180, module=RECIPES)
        dead[sink] = (done.returncode, done.stderr)
    left_running = {sink: sum(recipes.running(db) for db in folder.rglob("*.db")) for sink, folder in folders.items()}
    pairs = [str(x) for sink, folder in folders.items() for x in (sink, folder)]
    after = forkserver.run(pairs, REPO, _environ(Path(pairs[1]), None), 300, module=RECIPES)
    results = {}
    for line in after.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            results[item["sink"]] = item
    return {sink: (folders[sink], dead[sink], results.get(sink), after, left_running[sink]) for sink in SINKS}


@pytest.mark.slow
@pytest.mark.parametrize("sink", list(SINKS))
def test_killed_mid_write_then_the_next_command(sink, killed):
    folder, (code, stderr), result, after, left_running = killed[sink]
    assert code == -9, (code, stderr[-2000:])
    if sink in LEFT_RUNNING:  # the kill left a run or trial open: the next command ended it
        assert left_running >= 1, "the kill should have left a RUNNING run or trial to end"
    assert result is not None, after.stderr[-3000:]
    assert "Traceback" not in after.stderr, after.stderr[-3000:]
    assert result["status"] in ("ok", "exit 0"), result
    for db in folder.rglob("*.db"):
        assert recipes.integrity(db) == "ok", db
        assert recipes.running(db) == 0, f"{db}: a RUNNING run or trial after the next command"
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".yaml", ".csv") and TMP_MARK not in path.name:
            assert recipes.whole(path), path
    for tmp in folder.rglob(f"*{TMP_MARK}"):  # kept only where no later write went into its folder
        target = tmp.parent / tmp.name[1 : -len(TMP_MARK)].rsplit(".", 2)[0]
        assert not target.exists(), f"{tmp}: the next write into {tmp.parent} should have removed it"
