"""Read-only commands create and change nothing: the working folder, the MLflow store, the study
storage, the calibration cache and HOME are compared file by file (bytes and modification time)
before and after each of ``doctor --dry-run``, ``study --list``, ``study --top``, ``report``
(its ``--out`` folder aside), ``compare`` and ``fit --cv``, run in a fresh process; and in a
folder that holds no store at all, none of them makes one. HOME is one where matplotlib has
already built its font list (as any user's who has drawn a figure): a first import writes it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.conftest import run_dabench, write_test_calibration

pytestmark = pytest.mark.slow
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
        "fit --cv": ["fit", "--cv"],
    }


NAMES = list(
    commands({"env": {"MLFLOW_TRACKING_URI": ""}, "work": Path("."), "root": Path("."), "parent": "", "runs": []})
)


@pytest.mark.parametrize("name", NAMES)
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
