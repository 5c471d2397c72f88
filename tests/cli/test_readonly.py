"""Read-only commands create and change nothing. Driven by the frame's declarations
(cli/frame.py): every subcommand that can run writing no sink but its own ``--out`` or ``--csv``
has a case here whose arguments its declaration calls read-only. Each case runs in a fresh process
while the working folder, the MLflow store, the study storage, the calibration cache and HOME are
compared file by file (bytes and modification time); in a folder that holds no store, none makes
one; pointed at the wrong kind of store (an empty file, MLflow's for Optuna's and the other way)
it says so in one line and changes nothing. HOME is one where matplotlib has already built its
font list (as any user's who has drawn a figure): a first import writes it."""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from dabench.cli.main import COMMANDS
from tests.conftest import run_dabench, write_test_calibration

PREDICT = ["hardware=ipu", "hardware.mode=predict", "run.plots=never"]


def snapshot(*roots: Path) -> dict[str, tuple]:
    """Every file and folder under ``roots``: (kind, size, mtime_ns, sha1 of the bytes)."""
    seen: dict[str, tuple] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs:
                seen[os.path.join(folder, name)] = ("dir",)
            for name in files:
                path = Path(folder, name)
                info = path.lstat()
                digest = hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else ""
                seen[str(path)] = ("file", info.st_size, info.st_mtime_ns, digest)
    return seen


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    made = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    gone = [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changed = [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return made + gone + changed


def store_of(folder: Path) -> str:
    return f"sqlite:///{folder / 'mlruns' / 'mlflow.db'}"


def home_env(home: Path) -> dict[str, str]:
    """A HOME of its own, where matplotlib has built its font list already."""
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config")}
    if not (home / ".cache").exists():
        warm = "import matplotlib.font_manager"
        subprocess.run([sys.executable, "-c", warm], env={**os.environ, **env}, check=True, timeout=300)
    return env


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A working folder with a store (a two-run multirun and a single run), a study, a
    calibration cache and a HOME of its own; the environment the commands run in."""
    root = tmp_path_factory.mktemp("readonly")
    work, home, cache = root / "work", root / "home", root / "cache"
    for folder in (work, home, cache):
        folder.mkdir()
    write_test_calibration(cache, "test fixture (tests/cli/test_readonly.py), not a measurement")
    env = {**home_env(home), "DABENCH_CACHE_DIR": str(cache), "MLFLOW_TRACKING_URI": store_of(work)}
    run_dabench(*PREDICT, "model.n_layers=1,2", "-m", cwd=work, env=env, fresh=True)
    run_dabench(*PREDICT, cwd=work, env=env)
    storage = f"sqlite:///{work / 'mlruns' / 'optuna.db'}"
    study = optuna.create_study(study_name="ipu_deploy-gpt2_test", storage=storage, direction="maximize")
    for batch, value in ((1, 120.0), (2, 230.0)):
        trial = study.ask()
        trial.suggest_categorical("run.batch_size", [1, 2])
        trial.set_user_attr("dabench.overrides", ["+sweeps=ipu_deploy", f"run.batch_size={batch}"])
        trial.set_user_attr("dabench.status", "ok")
        study.tell(trial, value)
    failed = study.ask()
    failed.set_user_attr("dabench.status", "capacity")
    study.tell(failed, state=TrialState.FAIL)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    runs = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    parent = next(r.info.run_id for r in runs if r.data.tags.get("dabench.parent") == "true")
    children = [r.info.run_id for r in runs if r.data.tags.get("dabench.parent") != "true"]
    return {"root": root, "work": work, "home": home, "cache": cache, "env": env, "parent": parent, "runs": children}


def commands(place) -> dict[str, list[str]]:
    uri, storage = place["env"]["MLFLOW_TRACKING_URI"], f"sqlite:///{place['work'] / 'mlruns' / 'optuna.db'}"
    out = str(place["root"] / "report-out")
    return {
        "doctor --dry-run": ["doctor", "--dry-run", "--uri", uri, "--storage", storage],
        "study --list": ["study", "--list"],
        "study --top": ["study", "--study", "ipu_deploy-gpt2_test", "--top", "3"],
        "report (a sweep)": ["report", place["parent"], "--out", out],
        "report (every run)": ["report", "--out", out],
        "compare": ["compare", *place["runs"][:2]],
        "fit --cv": ["fit", "--cv", "--arch", "ipu"],  # one platform: the same reads, a sixth of the CPU
        "findings": ["findings"],
        "docs --check": ["docs", "--check"],
        "sync --list": ["sync", "--list"],
        "ingest": ["ingest", str(Path(__file__).parents[1] / "vendors" / "fixtures" / "compile_report_small.txt")],
        "advise (no record, no CSV)": ["advise", "model=tiny", "tokens=1e9", "platforms=ipu", "trials=2"]
        + ["record=false", "csv=none"],
    }


PLACE = {"env": {"MLFLOW_TRACKING_URI": "sqlite:///s.db"}, "work": Path("w"), "root": Path("r"), "parent": "p"}
CASES = commands({**PLACE, "runs": ["a" * 32, "b" * 32]})
DECLARED = {name: importlib.import_module(module).main for name, (module, _) in COMMANDS.items()}


def may_only_read(name: str) -> bool:
    """The declaration says some arguments write nothing (its own --out or --csv aside)."""
    return all(when is not True for sink, when in DECLARED[name].writes.items() if sink != "exports")


def test_every_command_that_may_only_read_has_a_case_its_declaration_calls_read_only():
    assert {argv[0] for argv in CASES.values()} == {name for name in DECLARED if may_only_read(name)}
    for case, argv in CASES.items():
        cmd = DECLARED[argv[0]]
        assert set(cmd.written(cmd.parse(argv[1:]))) <= {"exports"}, case


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_a_read_only_command_changes_nothing(place, name):
    roots = (place["work"], place["home"], place["cache"])
    before = snapshot(*roots)
    done = run_dabench(*commands(place)[name], cwd=place["work"], env=place["env"], code=None, fresh=True)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    found = changes(before, snapshot(*roots))
    assert not found, "\n".join([name, *found, done.stdout[-1500:], done.stderr[-1500:]])


@pytest.fixture(scope="module")
def warm_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    home_env(home)
    return home


EMPTY = {
    "doctor --dry-run": ["doctor", "--dry-run"],
    "study --list": ["study", "--list", "--storage", "sqlite:///{work}/optuna.db"],
    "report": ["report", "--out", "{root}/empty-report"],
    "compare": ["compare", "0123456789abcdef0123456789abcdef"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EMPTY))
def test_a_read_only_command_makes_no_store_where_there_is_none(tmp_path, warm_home, name):
    work, home = tmp_path / "work", warm_home
    work.mkdir()
    env = {**home_env(home), "MLFLOW_TRACKING_URI": store_of(work)}
    argv = [a.format(work=work, root=tmp_path) for a in EMPTY[name]]
    before = snapshot(work, home)
    done = run_dabench(*argv, cwd=work, env=env, code=None, fresh=True)
    assert done.returncode in (0, 1, 2), done.stderr[-2000:]
    found = changes(before, snapshot(work, home))
    assert not found, "\n".join([name, *found, done.stdout[-1500:], done.stderr[-1500:]])


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """An MLflow store, an Optuna storage, an empty file and a text file, side by side."""
    from mlflow.tracking import MlflowClient

    folder = tmp_path_factory.mktemp("kinds")
    MlflowClient(f"sqlite:///{folder / 'mlflow.db'}").search_experiments()
    optuna.create_study(study_name="s", storage=f"sqlite:///{folder / 'optuna.db'}")
    (folder / "empty.db").touch()
    (folder / "text.db").write_text("not a database\n")
    return folder


WRONG = {
    "doctor --dry-run, an empty file": ["doctor", "--dry-run", "--uri", "sqlite:///{f}/empty.db"],
    "doctor --dry-run, Optuna's": ["doctor", "--dry-run", "--uri", "sqlite:///{f}/optuna.db"],
    "doctor --dry-run, MLflow's as Optuna's": ["doctor", "--dry-run", "--storage", "sqlite:///{f}/mlflow.db"],
    "study --list, MLflow's": ["study", "--list", "--storage", "sqlite:///{f}/mlflow.db"],
    "study --list, an empty file": ["study", "--list", "--storage", "sqlite:///{f}/empty.db"],
    "report, Optuna's": ["report", "--out", "{f}/out", "--tracking-uri", "sqlite:///{f}/optuna.db"],
    "compare, an empty file": ["compare", "0" * 32, "--tracking-uri", "sqlite:///{f}/empty.db"],
    # commands that may write: an existing file that is no SQLite database is refused all the same
    "fit --from-mlflow, a text file": ["fit", "--from-mlflow", "--tracking-uri", "sqlite:///{f}/text.db"],
    "study, a text file": ["study", "--study", "s", "--storage", "sqlite:///{f}/text.db"],
}


@pytest.mark.parametrize("case", list(WRONG))
def test_the_wrong_kind_of_store_is_one_line_and_changes_nothing(stores, case, capsys, monkeypatch):
    monkeypatch.chdir(stores)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{stores / 'mlflow.db'}")
    argv = [a.format(f=stores) for a in WRONG[case]]
    before = snapshot(stores)
    code = DECLARED[argv[0]](argv[1:])
    said = capsys.readouterr()
    assert code in (1, 2) and "Traceback" not in said.err, (case, said)
    assert changes(before, snapshot(stores)) == [], case
    named = [line for line in (said.err + said.out).splitlines() if "holds" in line or "not a SQLite" in line]
    assert len(named) == 1, (case, said)
