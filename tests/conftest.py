"""Shared fixtures: the repo's conf/ folder composed with Hydra, and an isolated MLflow store."""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tests import forkserver

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


def need_shared_fixtures(path: Path = SHARED_FIXTURES) -> Path:
    """``path`` (the vendor artifacts in ../shared/fixtures) when present. Absent: a skip that says
    so, except in CI (env CI=true), where a missing fixture folder is a failure, not a silent skip."""
    if path.is_dir():
        return path
    message = f"shared fixtures absent: {path} (a sibling folder of the repository, not part of a clone)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}; CI=true requires it")
    pytest.skip(message)


@pytest.fixture
def shared_fixtures() -> Path:
    """The ../shared/fixtures folder (see :func:`need_shared_fixtures`)."""
    return need_shared_fixtures()


#: Mark for tests that read ../shared/fixtures: skipped with a reason where absent, failed under CI=true.
requires_shared = pytest.mark.usefixtures("shared_fixtures")


def composed(overrides: list[str] | None = None) -> dict:
    """The config `python -m dabench <overrides>` would run, as a plain dict."""
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("config", overrides=overrides or [])
    return OmegaConf.to_container(cfg, resolve=True)


def schema_leaves() -> dict:
    """Path -> spec of every scalar field of the config schema, list's items (``x[]``) and open
    map's values (``x.*``)."""
    from dabench.config.fields import ITEMS, LIST, MAP
    from dabench.config.schema import fields

    out = {}
    for path, spec in fields().items():
        if spec.kind == LIST:
            out[path + "[]"] = spec.item
        elif spec.kind == MAP:
            out[path + ".*"] = spec.item
        elif spec.kind != ITEMS:
            out[path] = spec
    return out


@pytest.fixture
def isolated_env(tmp_path, monkeypatch):
    """A temp launch dir with its own MLflow store and calibration cache dir shared per session."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)
    return tmp_path


def fresh_calibration(monkeypatch, folder: Path) -> None:
    """A calibration cache in ``folder`` that this process has not read yet, with no recalibrate
    request and no injected load (each test patches in its own repeats and load)."""
    from dabench.host import calibrate

    monkeypatch.setenv("DABENCH_CACHE_DIR", str(folder))
    monkeypatch.delenv("DABENCH_RECALIBRATE", raising=False)
    monkeypatch.delenv(calibrate.LOAD_ENV, raising=False)
    monkeypatch.setattr(calibrate, "_PROCESS", {})


def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for a `python -m dabench` subprocess writing to a temp MLflow store."""
    env = dict(os.environ)
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env.pop("DABENCH_PARENT_RUN_ID", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


#: headless Chromium for the browser tests (Debian's package; no network beyond 127.0.0.1)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def need_chromium() -> str:
    """The browser: a skip that says so where it is absent, a failure under CI=true."""
    if CHROMIUM:
        return CHROMIUM
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("chromium is not installed (apt-get install -y chromium); CI=true requires the browser test")
    pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")


def default_sigint() -> None:
    """``preexec_fn`` for a child the test will Ctrl-C: a shell's background job starts its children
    with SIGINT ignored, and Python then installs no KeyboardInterrupt handler; give the child the
    default a user's terminal gives it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: third-party warning lines a default run must not print (kineto's USDT lines and its complaint about
#: the profiler's thread, MLflow's INFO lines, setuptools warnings); the variables that would silence
#: them are unset for such a check
NOISE = re.compile(r"warn|USDT|registerClient|kineto|INFO mlflow|setuptools|pkg_resources|distutils", re.IGNORECASE)
QUIET_UNSET = ("KINETO_LOG_LEVEL", "MLFLOW_LOGGING_LEVEL", "DABENCH_VERBOSE")


def noise(stderr: str) -> list[str]:
    """The lines of ``stderr`` that :data:`NOISE` matches."""
    return [line for line in stderr.splitlines() if NOISE.search(line)]


def dabench_argv(*args: str) -> list[str]:
    """The command line of ``python -m dabench <args>`` in this interpreter (for ``Popen``)."""
    return [sys.executable, "-m", "dabench", *args]


def run_dabench(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    code: int | None = 0,
    timeout: float = 300,
    unset: Sequence[str] = (),
    fresh: bool = False,
) -> subprocess.CompletedProcess:
    """``python -m dabench <args>`` in ``cwd`` with its own MLflow store (:func:`cli_env`), ``env``
    added and ``unset`` removed; asserts the exit status is ``code`` (``None``: any). A fork of a
    warm interpreter (tests/forkserver.py) where that runs the same; ``fresh``: a new process
    (for what is decided at import time, e.g. third-party warnings)."""
    full = {**cli_env(cwd), **(env or {})}
    for name in unset:
        full.pop(name, None)
    done = forkserver.run(list(args), cwd, full, timeout, fresh=fresh)
    if code is not None:
        assert done.returncode == code, (
            f"dabench {' '.join(args)}: exit {done.returncode}, expected {code}\n"
            + done.stdout[-2000:]
            + done.stderr[-3000:]
        )
    return done


@pytest.fixture
def run_cli(tmp_path):
    """The one way tests run the CLI: ``run_cli(*args, code=0, env=None, cwd=tmp_path)``."""

    def run(*args: str, cwd: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
        return run_dabench(*args, cwd=cwd or tmp_path, **kwargs)

    return run


#: Ceilings that tests' measured CPU runs are judged against, so that the suite does not depend on
#: whether the machine is quiet enough to calibrate (a calibration is refused under load; see
#: dabench/host/calibrate.py). Deliberately above any CPU (10 TFLOP/s, 1 TB/s): efficiencies
#: in tests are small and never a statement about this machine. tests/host/test_calibrate.py measures
#: for real in its own cache folder; benchmarks/validate_cpu.py uses the user's real cache.
TEST_CALIBRATION = {"gemm_fp32": 1e13, "gemm_bf16": 1e13, "gemm_fp16": 1e13, "copy": 1e12}


def write_test_calibration(folder: Path, label: str) -> Path:
    """``folder``/calibration.json holding TEST_CALIBRATION for this machine's keys (every thread
    count up to the core count); ``label`` goes in each entry's ``measured_at``, which must say
    that it is a fixture, not a measurement."""
    import json
    from importlib.metadata import version

    from dabench.host.info import cpu_calibration_key

    entries = {}
    for threads in range(1, (os.cpu_count() or 1) + 1):
        for kind, value in TEST_CALIBRATION.items():
            key = cpu_calibration_key(kind, threads, version("torch"))  # torch-free here
            entries[key] = {
                "key": key,
                "value": value,
                "samples": [value] * 5,
                "spread": 0.0,
                "load_per_core": 0.0,
                "measured_at": label,
            }
    path = folder / "calibration.json"
    path.write_text(json.dumps(entries))
    return path


@pytest.fixture(scope="session", autouse=True)
def test_calibration_cache(tmp_path_factory):
    """DABENCH_CACHE_DIR -> a session folder holding TEST_CALIBRATION (:func:`write_test_calibration`),
    labelled as a test fixture, not a measurement."""
    folder = tmp_path_factory.mktemp("dabench_cache")
    write_test_calibration(folder, "test fixture (tests/conftest.py), not a measurement")
    previous = os.environ.get("DABENCH_CACHE_DIR")
    os.environ["DABENCH_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("DABENCH_CACHE_DIR", None)
    else:
        os.environ["DABENCH_CACHE_DIR"] = previous


@pytest.fixture(scope="session", autouse=True)
def steady_check_off():
    """The suite shares a loaded 2-core box: measured runs record their conditions but are not
    judged by them (``DABENCH_STEADY_CHECK=off``, dabench/host/conditions.py); the tests of the
    check (tests/host/test_conditions.py, tests/backends/test_unsteady.py) turn it on themselves."""
    previous = os.environ.get("DABENCH_STEADY_CHECK")
    os.environ["DABENCH_STEADY_CHECK"] = "off"
    yield
    if previous is None:
        os.environ.pop("DABENCH_STEADY_CHECK", None)
    else:
        os.environ["DABENCH_STEADY_CHECK"] = previous


@pytest.fixture(autouse=True)
def own_validation_record(tmp_path, monkeypatch):
    """Each test its own record of this machine's validate errors (dabench/host/validation.py): one
    test's CPU validate runs never size another's CPU band; and this machine taken for the CPU
    validation grid's (:func:`pin_grid_machine`)."""
    from dabench.host import validation

    monkeypatch.setattr(validation, "path", lambda: tmp_path / "validation.json")
    pin_grid_machine(monkeypatch.setattr)


def pin_grid_machine(setattr_=setattr) -> None:
    """This machine taken for the one that measured the shipped CPU validation grid: a CPU band (as
    the goldens record it) is then the same on every machine (tests/golden/record.py uses it too)."""
    import json

    from dabench.host import validation

    machine = json.loads(validation.SHIPPED.read_text())["machine"]
    setattr_(validation, "machine", lambda: machine)


#: modules whose tests are independent of each other (no module- or session-scoped fixture they
#: share): pytest-xdist spreads them test by test; every other module runs on one worker
SPREAD_MODULES = {"tests/docs/test_examples.py", "tests/golden/test_golden.py"}


#: the slow suite's longest groups, longest first (`--durations`, 2-core machine): handed out first,
#: so that the xdist workers end together (longest-processing-time first); a stale entry costs time only
LONGEST_FIRST = (
    "tests/cli/test_secrets_everywhere.py",
    "tests/backends/test_measured_conditions.py",
    "scaleout_stack",
    "tests/scaleout/test_soak.py",
    "tests/scaleout/test_ray.py",
    "tests/runtime/test_quiet.py",
    "tests/cli/test_ui.py",
    "tests/reliability/test_command_faults.py",
    "tests/cli/test_run.py",
    "tests/packaging/test_wheel.py",
    "tests/scaleout/test_submitit.py",
    "tests/report/test_report_cli.py",
    "tests/tracking/test_outbox.py",
    "tests/tune/test_sweeper_e2e.py",
    "tests/ingest/test_fuzz.py",
    "tests/config/test_fuzz.py",
    "tests/config/test_config_zoo.py",
)


def pytest_configure(config):
    """pytest-xdist hands out the groups in collection order (set by :func:`pytest_collection_modifyitems`)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """Under ``pytest -n N --dist loadgroup`` (the README's test command, .ci/run), keep each module's tests on
    one worker, so a module-scoped fixture (a store, a server) is built once; a test that already
    names its group keeps it. Groups run in the order :data:`LONGEST_FIRST`, then by their number
    of tests (most first), a group's tests in their own order."""
    for item in items:
        module = Path(str(item.fspath)).relative_to(ROOT).as_posix()
        if module in SPREAD_MODULES or item.get_closest_marker("xdist_group"):
            continue
        item.add_marker(pytest.mark.xdist_group(module))
    groups = [marker.args[0] if (marker := item.get_closest_marker("xdist_group")) else item.nodeid for item in items]
    size, first = collections.Counter(groups), {}
    for i, group in enumerate(groups):
        first.setdefault(group, i)
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    order = sorted(
        range(len(items)), key=lambda i: (rank.get(groups[i], len(rank)), -size[groups[i]], first[groups[i]], i)
    )
    items[:] = [items[i] for i in order]
