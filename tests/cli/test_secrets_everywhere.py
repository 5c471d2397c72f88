"""Secrets never stored, by construction (issue 23): every command of the CLI registry
(``dabench.cli.main.COMMANDS``) and the Hydra task (a run, a multirun sweep, an Optuna study) runs
against a real ``mlflow server`` with a canary password in the tracking URI
(``http://user:<canary>@127.0.0.1:PORT``: MLflow's client sends it as basic auth, the plain
server ignores it) and a second canary in the environment, used by an environment-derived option
(``+tracking.tags.api_token=${oc.env:DABENCH_CANARY_TOKEN}`` and, under a key that names no
secret, ``+tracking.tags.note=${oc.env:DABENCH_CANARY_TOKEN}``). Then neither canary may appear
in: the server's backend store (the raw bytes of its SQLite file, free pages included), its
artifact root, its log, the Optuna storage (raw bytes), any file under the launch folder
(outputs/, multirun/, .hydra/, logs, report/, CSVs, the outbox), nor any command's stdout or stderr.

Coverage by construction: :data:`RECIPES` holds, for every registered command, how it is run
against that store (or why it touches none: it still runs, with the canaries in its
environment, and its output is scanned). The test fails, naming the command, when a command is
registered without a recipe. Slow: a real mlflow server and ~16 ``python -m dabench`` processes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from dabench.cli.main import COMMANDS
from tests.conftest import SHARED_FIXTURES, run_dabench
from tests.scaleout.servers import mlflow_server

PASSWORD = "CanaryPw7Qx93"  #: in the tracking URI's userinfo
TOKEN = "CanaryTok5Zr28"  #: in the environment, reaching the config through ${oc.env:...}
CANARIES = (PASSWORD, TOKEN)
HYDRA_TASK = "(hydra task)"  #: ``dabench [overrides] [-m]``: not in COMMANDS, the default entry
ENV_OPTIONS = [
    "+tracking.tags.api_token=${oc.env:DABENCH_CANARY_TOKEN}",
    "+tracking.tags.note=${oc.env:DABENCH_CANARY_TOKEN}",
]
PREDICT = ["hardware=ipu", "parallel=pp", "hardware.mode=predict"]
#: a 2-job sweep: cuda has no default sweep of its own (hardware=ipu parallel=pp -m adds 26 placements)
SWEEP = ["hardware=cuda", "hardware.mode=predict", "model.n_layers=1,2"]


@dataclass
class Context:
    cwd: Path
    uri: str  #: the tracking URI with the canary password
    plain_uri: str  #: the same server, no userinfo (for the test's own reads)
    storage: str  #: the Optuna storage (a SQLite file in the launch folder)
    env: dict[str, str]
    outputs: list[tuple[str, str]] = field(default_factory=list)  #: (command, stdout + stderr)

    def dabench(self, label: str, *args: str, code: int | None = 0) -> str:
        done = run_dabench(*args, cwd=self.cwd, env=self.env, code=code, timeout=900)
        text = done.stdout + done.stderr
        self.outputs.append((label, text))
        (self.cwd.parent / f"output-{len(self.outputs):02d}-{label}.txt").write_text(text)  # beside, not scanned
        return text

    def run_ids(self) -> list[str]:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(self.plain_uri)
        experiment = client.get_experiment_by_name("dabench")
        return [r.info.run_id for r in client.search_runs([experiment.experiment_id], max_results=1000)]


def hydra_task(ctx: Context) -> None:
    """A single run, a multirun sweep of 2 jobs and an Optuna study of 2 trials; the URI on the
    command line (so the printed and stored command lines carry it) and in the environment."""
    ctx.dabench("run", *PREDICT, f"tracking.uri={ctx.uri}", *ENV_OPTIONS)
    ctx.dabench("sweep", *SWEEP, f"tracking.uri={ctx.uri}", *ENV_OPTIONS, "-m")
    ctx.dabench(
        "study",
        "+sweeps=rdu_deploy",
        "hydra.sweeper.space.hook=null",
        "hydra.sweeper.n_trials=2",
        "hydra.sweeper.study_name=canary-study",
        f"hydra.sweeper.storage={ctx.storage}",
        f"tracking.uri={ctx.uri}",
        *ENV_OPTIONS,
        "-m",
    )


def grid(ctx: Context) -> None:
    ctx.dabench("grid", "grid", *SWEEP, f"tracking.uri={ctx.uri}", *ENV_OPTIONS)


def report(ctx: Context) -> None:
    ctx.dabench("report", "report", "dabench", "--tracking-uri", ctx.uri, "--out", str(ctx.cwd / "report"))


def compare(ctx: Context) -> None:
    ids = ctx.run_ids()
    ctx.dabench("compare", "compare", *ids[:3], "--tracking-uri", ctx.uri, "--csv", str(ctx.cwd / "compare.csv"))


def study(ctx: Context) -> None:
    ctx.dabench("study", "study", "--storage", ctx.storage, "--study", "canary-study", "--top", "2")


def doctor(ctx: Context) -> None:
    ctx.dabench("doctor", "doctor", "--uri", ctx.uri, "--storage", ctx.storage, code=None)


def ingest(ctx: Context) -> None:
    artifact = SHARED_FIXTURES / "sambanova" / "logreg"
    if not artifact.is_dir():
        artifact = Path(__file__).resolve().parents[1] / "vendors" / "fixtures" / "sambaflow_small"
    ctx.dabench("ingest", "ingest", str(artifact), "--log", "--tracking-uri", ctx.uri)


def ui(ctx: Context) -> None:
    """The store is a server already: ``dabench ui`` prints its URL and starts nothing."""
    ctx.dabench("ui", "ui", "--tracking-uri", ctx.uri, "--no-browser", "--timeout-s", "60")


def sync(ctx: Context) -> None:
    """A run kept in the outbox while the server was away (written here through the outbox's own
    API, with the canaries in its URI and params), replayed by ``dabench sync`` into the server."""
    from dabench.core.status import Status
    from dabench.tracking.outbox import Journal

    outbox = ctx.cwd / "mlruns-outbox"
    previous = {name: os.environ.get(name) for name in ("DABENCH_OUTBOX", "DABENCH_CANARY_TOKEN")}
    os.environ.update(DABENCH_OUTBOX=str(outbox), DABENCH_CANARY_TOKEN=TOKEN)  # as in the dabench process
    try:
        now = int(time.time() * 1000)
        journal = Journal.new(
            uri=ctx.uri,
            experiment="dabench",
            run_name="kept while away",
            start_ms=now,
            tags={"dabench.mode": "predict", "note": TOKEN},
            parent=None,
        )
        journal.log(
            {"tracking.uri": ctx.uri, "tracking.tags.api_token": TOKEN},
            {"throughput.samples_per_s": 1.0},
            {"api_token": TOKEN},
        )
        journal.close(Status.OK, "", now + 10, status_tags=True)
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    out = ctx.dabench("sync", "sync", "--tracking-uri", ctx.uri, "--outbox", str(outbox))
    assert "1 runs replayed" in out, out


def advise(ctx: Context) -> None:
    ctx.dabench(
        "advise",
        "advise",
        "model=gpt2_small",
        "tokens=1e9",
        "platforms=ipu",
        "trials=4",
        f"tracking_uri={ctx.uri}",
        "csv=advice.csv",
    )


def fit(ctx: Context) -> None:
    """Touches no store (refits model constants): run with the canaries in its environment."""
    ctx.dabench("fit", "fit", "--check", code=None)


def docs(ctx: Context) -> None:
    """Touches no store (compares the docs' generated blocks with their generators)."""
    ctx.dabench("docs", "docs", "--check", code=None)


def findings(ctx: Context) -> None:
    """Touches no store (runs the models at the findings' settings, compares with the docs' table)."""
    ctx.dabench("findings", "findings", "--check", code=None)


def calibrate(ctx: Context) -> None:
    """Touches no store (this machine's ceilings, cached: tests/conftest.py's test calibration)."""
    ctx.dabench("calibrate", "calibrate")


#: how each command is run against the store, in the order they run (later ones read what
#: earlier ones recorded). A new command in COMMANDS must get a line here.
RECIPES: dict[str, Callable[[Context], None]] = {
    HYDRA_TASK: hydra_task,
    "grid": grid,
    "ingest": ingest,
    "sync": sync,
    "advise": advise,
    "report": report,
    "compare": compare,
    "study": study,
    "doctor": doctor,
    "ui": ui,
    "fit": fit,
    "docs": docs,
    "findings": findings,
    "calibrate": calibrate,
}
#: the commands that read or write the run store or the study storage
TOUCH_STORE = {HYDRA_TASK, "grid", "ingest", "sync", "advise", "report", "compare", "study", "doctor", "ui"}


def test_every_registered_command_has_a_recipe():
    """Fast, and the gate of the slow scan: a command registered without a recipe fails here."""
    missing = sorted(set(COMMANDS) - set(RECIPES))
    stale = sorted(set(RECIPES) - set(COMMANDS) - {HYDRA_TASK})
    assert not missing, f"commands in dabench.cli.main.COMMANDS without a secrets recipe: {missing}"
    assert not stale, f"recipes for commands that are no longer registered: {stale}"
    assert set(RECIPES) == set(COMMANDS) | {HYDRA_TASK} and TOUCH_STORE <= set(RECIPES)


def _hits(path: Path) -> list[str]:
    try:
        data = path.read_bytes()
    except OSError:
        return []
    return [f"{path}: {c}" for c in CANARIES if c.encode() in data]


def _scan(folder: Path) -> list[str]:
    return [hit for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink() for hit in _hits(p)]


@pytest.mark.slow
def test_no_command_stores_or_prints_a_secret(tmp_path):
    test_every_registered_command_has_a_recipe()
    backend = tmp_path / "server" / "backend.db"
    backend.parent.mkdir()
    launch = tmp_path / "launch"
    launch.mkdir()
    with mlflow_server(f"sqlite:///{backend}") as server:
        uri = server.uri.replace("http://", f"http://canary:{PASSWORD}@")
        env = {"MLFLOW_TRACKING_URI": uri, "DABENCH_CANARY_TOKEN": TOKEN, "HOME": str(launch)}
        ctx = Context(cwd=launch, uri=uri, plain_uri=server.uri, storage=f"sqlite:///{launch / 'optuna.db'}", env=env)
        timings = {}
        for name, recipe in RECIPES.items():
            started = time.monotonic()
            recipe(ctx)
            timings[name] = round(time.monotonic() - started, 1)
        # every command did record what it should: the scan below is not vacuous
        from mlflow.tracking import MlflowClient

        client = MlflowClient(server.uri)
        experiment = client.get_experiment_by_name("dabench").experiment_id
        runs = client.search_runs([experiment], max_results=1000)
        tags = [r.data.tags for r in runs]
        assert any(t.get("api_token") == "***" and t.get("note") == "***" for t in tags), tags[:3]
        assert any(t.get("dabench.source") == "sambaflow_compile" for t in tags)  # ingest --log
        assert any("kept while away" == r.info.run_name for r in runs)  # sync
        assert len(runs) >= 10
        artifact_root = server.log.parent / "artifacts"
        assert any(artifact_root.rglob("*")), "the server stored no artifact"
        hits = _scan(tmp_path / "server") + _scan(artifact_root) + _hits(server.log) + _scan(launch)
        hits += [f"output of {label}" for label, text in ctx.outputs for c in CANARIES if c in text]
    assert (launch / "optuna.db").is_file() and (launch / "outputs").is_dir() and (launch / "multirun").is_dir()
    print(
        f"\nsecrets: {len(ctx.outputs)} invocations of {len(RECIPES)} recipes, {len(runs)} runs scanned; "
        f"timings (s): {json.dumps(timings)}"
    )
    assert hits == [], "canary found in:\n" + "\n".join(hits)
