"""A platform from another distribution (entry point group ``dabench.platforms``): the toy package
in toy_package/ (its own pyproject.toml, a three-line model, its preset in its own conf/) is
pip-installed into a temporary folder and found through PYTHONPATH; then it runs, shows and checks
its options, is advised on and listed. bad_package/ holds a plugin that fails to import and one
whose name is taken: one line each, naming the distribution, and the others keep working."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """name -> the folder the package of ``<name>_package/`` is installed into (built from a copy)."""
    if not importlib.util.find_spec("setuptools"):
        pytest.skip("building the plugin packages offline needs setuptools in this environment")
    tmp = tmp_path_factory.mktemp("plugins")
    out = {}
    for name in ("toy", "bad"):
        source = shutil.copytree(HERE / f"{name}_package", tmp / "src" / name)
        target = tmp / name
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
            + ["--target", str(target), str(source)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        out[name] = target
    return out


def dabench(tmp_path: Path, paths: list[Path], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "DABENCH_PARENT_RUN_ID")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "dabench", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_an_installed_platform_runs_shows_and_checks_its_options(installed, tmp_path):
    toy = [installed["toy"]]
    done = dabench(tmp_path, toy, "hardware=toy", "hardware.mode=predict")
    assert done.returncode == 0 and "dabench: ok | PREDICTED |" in done.stdout + done.stderr, done.stderr[-2000:]
    assert "efficiency: 0.5" in dabench(tmp_path, toy, "hardware=toy", "--cfg", "job").stdout
    bad = dabench(tmp_path, toy, "hardware=toy", "hardware.mode=predict", "hardware.options.efficiency=3")
    assert bad.returncode == 2 and "hardware.options.efficiency=3: must be > 0 and <= 1 (share of" in bad.stderr
    typo = dabench(tmp_path, toy, "hardware=toy", "hardware.mode=predict", "hardware.options.eficiency=0.5")
    assert typo.returncode == 2 and "did you mean hardware.options.efficiency?" in typo.stderr
    unknown = dabench(tmp_path, toy, "hardware=toyy")
    assert unknown.returncode == 2 and "did you mean toy?" in unknown.stderr and "sn40l, toy, wse2" in unknown.stderr
    hardware = [line for line in dabench(tmp_path, toy, "--help").stdout.splitlines() if line.startswith("hardware:")]
    assert hardware and "toy" in hardware[0].split(": ", 1)[1].split(", ")


@pytest.mark.slow
def test_an_installed_platform_is_advised_on(installed, tmp_path):
    done = dabench(tmp_path, [installed["toy"]], "advise", "model=tiny", "tokens=1B", "platforms=toy", "trials=2")
    assert done.returncode == 0 and "1. toy:" in done.stdout, done.stderr[-2000:]
    unknown = dabench(tmp_path, [installed["toy"]], "advise", "model=tiny", "tokens=1B", "platforms=tpu")
    assert unknown.returncode == 2 and "ipu, gaudi2, gaudi3, toy" in unknown.stderr


@pytest.mark.slow
def test_a_broken_or_clashing_plugin_is_one_line_and_the_others_work(installed, tmp_path):
    done = dabench(tmp_path, [installed["toy"], installed["bad"]], "hardware=toy", "hardware.mode=predict")
    assert done.returncode == 0 and "dabench: ok | PREDICTED |" in done.stdout + done.stderr, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if "dabench-bad-platforms" in line]
    assert len(lines) == 2, done.stderr[-2000:]
    assert "broken = bad_platforms.broken:PLATFORM" in lines[0] and "ModuleNotFoundError" in lines[0]
    assert "cpu = bad_platforms:CLASH" in lines[1] and "'cpu' is taken" in lines[1]
    listed = dabench(tmp_path, [installed["toy"], installed["bad"]], "advise", "model=tiny", "tokens=1B", "platforms=x")
    refusal = listed.stderr.splitlines()[-1]  # the valid names: every platform that loaded, none that did not
    assert listed.returncode == 2 and "=x: must be one of " in refusal, listed.stderr[-2000:]
    names = refusal.split("must be one of ", 1)[1].split(", ")
    assert names[0] == "cpu" and names[-1] == "toy" and {"cuda", "gaudi3"} <= set(names) and "broken" not in names
