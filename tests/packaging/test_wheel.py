"""A built wheel is a whole dabench: it carries conf/ and sweeps/ (as dabench/_data/, setup.py's
build_py) and the package data, and its ``dabench`` composes, runs and records a run and an
Optuna sweep from an empty folder outside the repository.

The wheel is built from a copy of the sources (no build/ or egg-info left in the checkout) and
installed, without dependencies, into a fresh venv that sees this environment's third-party
packages through a .pth line (nothing is downloaded; the editable install's import hook lives
in a .pth of that folder, which a path entry does not run). So ``dabench`` and
``hydra_plugins`` come from the wheel alone; the test checks that they do.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: what the wheel is built from (a copy of these; tests/, docs/, benchmarks/ are not part of it)
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "dabench", "hydra_plugins", "conf", "sweeps")
#: files of the package that runs need, beside the Python modules
PACKAGE_DATA = (
    "dabench/_data/conf/config.yaml",
    "dabench/_data/conf/hardware/ipu.yaml",
    "dabench/_data/conf/hardware/sources/ipu.yaml",
    "dabench/_data/conf/default_sweep/ipu_pp.yaml",
    "dabench/_data/sweeps/ipu_deploy.yaml",
    "dabench/fit/points.csv",
    "dabench/fit/residuals.json",
    "dabench/report/templates/report.html.j2",
    "dabench/py.typed",
)


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(map(str, argv))}: exit {done.returncode}\n" + done.stdout[-3000:] + "\n" + done.stderr[-4000:]
    )
    return done


def _build_wheel(tmp: Path) -> Path:
    source, dist = tmp / "src", tmp / "dist"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_data"))
        else:
            shutil.copy2(path, source / name)
    # this venv's setuptools: offline and fast; without it pip fetches setuptools from PyPI (pyproject's build-system)
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(dist), str(source)],
        cwd=tmp,
        env=dict(os.environ),
        timeout=300,
    )
    wheels = sorted(dist.glob("dabench-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _fresh_venv(tmp: Path, wheel: Path) -> Path:
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp, env=dict(os.environ), timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=tmp,
            env=dict(os.environ),
            timeout=60,
        ).stdout.strip()
    )
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "zz_dabench_test_deps.pth").write_text("".join(f"{p}\n" for p in sorted(deps)))
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        cwd=tmp,
        env=dict(os.environ),
        timeout=300,
    )
    return venv


def _runs(store: Path) -> list[tuple[str, str, str | None]]:
    """(name, MLflow status, dabench.status tag) of every run in the launch folder's store."""
    with sqlite3.connect(store) as db:
        return db.execute(
            "SELECT r.name, r.status, t.value FROM runs r LEFT JOIN tags t "
            "ON t.run_uuid = r.run_uuid AND t.key = 'dabench.status' ORDER BY r.start_time"
        ).fetchall()


@pytest.mark.slow
def test_wheel_runs_from_an_empty_folder(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [n for n in PACKAGE_DATA if n not in names]
    assert not missing, f"{wheel.name} lacks {missing}"
    assert not any(n.startswith(("tests/", "conf/", "sweeps/", "docs/")) for n in names)
    bundled = sorted(n.split("dabench/_data/", 1)[1] for n in names if n.startswith("dabench/_data/"))
    shipped = sorted(
        p.relative_to(ROOT).as_posix()
        for folder in ("conf", "sweeps")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert bundled == shipped, "the wheel's dabench/_data/ differs from the checkout's conf/ and sweeps/"

    venv = _fresh_venv(tmp_path, wheel)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI", "DABENCH_PARENT_RUN_ID")
    }
    env["PATH"] = os.pathsep.join((str(venv / "bin"), env.get("PATH", "")))
    env["PYTHONUNBUFFERED"] = "1"

    where = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import dabench, hydra_plugins.dabench_optuna_sweeper as s; from dabench.config import paths; "
            "print(dabench.__file__); print(s.__file__); print(paths.CONF_DIR); print(paths.BUNDLED)",
        ],
        cwd=empty,
        env=env,
        timeout=120,
    ).stdout.split()
    site = str(venv)
    assert all(line.startswith(site) for line in where[:3]), where
    assert where[2].endswith("dabench/_data/conf") and where[3] == "True", where
    assert str(ROOT) not in " ".join(where)

    single = _run([str(venv / "bin" / "dabench")], cwd=empty, env=env, timeout=300)
    assert "dabench: ok" in single.stdout, single.stdout[-2000:]
    sweep = _run(
        [str(venv / "bin" / "dabench"), "+sweeps=ipu_deploy", "hydra.sweeper.n_trials=2", "hydra.sweeper.seed=0", "-m"],
        cwd=empty,
        env=env,
        timeout=300,
    )
    assert "study ipu_deploy-gpt2_test" in sweep.stdout, sweep.stdout[-2000:]

    runs = _runs(empty / "mlruns" / "mlflow.db")
    assert runs[0][1:] == ("FINISHED", "ok"), runs  # the plain `dabench`
    trials = [r for r in runs if r[0].startswith("gpt2_test ")]
    assert len(trials) == 2, runs
    # a trial may be refused by the model (capacity) but never crash or be mis-composed
    assert all(status in ("ok", "capacity", "oom", "compile_error") for _, _, status in trials), trials
    assert any(r[0] == "study ipu_deploy-gpt2_test" and r[1] == "FINISHED" for r in runs), runs
