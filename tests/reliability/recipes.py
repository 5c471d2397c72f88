"""One recipe per registered sink (dabench/runtime/sinks.py): the command path that writes it, run
in a prepared folder, and what a consistent end state means there. Used in-process by
test_fault_matrix.py and as ``python -m tests.reliability.recipes SINK FOLDER`` for the cases
where the process is killed mid-write.

A recipe returns an :class:`Outcome`: the status the command ended with, the one line the user
saw, the SQLite files that must pass ``PRAGMA integrity_check`` and hold no RUNNING run or trial,
and the files that must be whole (parse) or absent.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import sqlite3
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

PREDICT = ["hardware=ipu", "hardware.mode=predict", "model=tiny"]


@dataclass
class Outcome:
    status: str  #: the run's status, or the command's exit code as "exit N"
    message: str  #: what the user was told (one line expected)
    databases: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  #: must be whole (parse) or absent
    run_ids: list[str] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)  #: the sinks the command's declaration says it writes


def prepare_folder(folder: Path, template: Path | None) -> None:
    """The folder a recipe runs in: its own outbox and cache, and a copy of the template store."""
    (folder / "mlruns").mkdir(parents=True, exist_ok=True)
    if template is not None and not (folder / "mlruns" / "mlflow.db").exists():
        shutil.copy(template, folder / "mlruns" / "mlflow.db")


def environ(folder: Path) -> dict[str, str]:
    return {
        "DABENCH_OUTBOX": str(folder / "outbox"),
        "DABENCH_CACHE_DIR": str(folder / "cache"),
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": "2",
    }


def store_uri(folder: Path) -> str:
    return f"sqlite:///{folder / 'mlruns' / 'mlflow.db'}"


def make_template(path: Path) -> list[str]:
    """A store with the schema made and two recorded runs (what compare reads); their ids."""
    from dabench.tracking.store import client_and_experiment
    from dabench.tracking.writes import write_batch

    client, experiment = client_and_experiment(f"sqlite:///{path}", "dabench")
    ids = []
    for batch in (1, 2):
        run = client.create_run(experiment, run_name=f"template b{batch}")
        write_batch(client, run.info.run_id, {"run.batch_size": batch}, {"throughput.samples_per_s": 10.0 * batch})
        client.set_terminated(run.info.run_id, status="FINISHED")
        ids.append(run.info.run_id)
    return ids


def _record(folder: Path, uri: str) -> Outcome:
    """The Hydra task's recording path: prepare, record_run with artifacts in the run folder."""
    from dabench.config.compose import compose
    from dabench.pipeline.job import prepare
    from dabench.pipeline.record import record_run

    job = prepare(compose([*PREDICT, f"tracking.uri={uri}"]))
    run_dir = folder / "outputs" / "run"
    result, run_id = record_run(job, artifacts_dir=run_dir / "artifacts")
    files = [run_dir / "artifacts" / name for name in ("config.yaml", "result.json")]
    databases = [folder / "mlruns" / "mlflow.db"]
    return Outcome(result.status.value, result.reason, databases, files, [run_id] if run_id else [])


def store(folder: Path) -> Outcome:
    return _record(folder, store_uri(folder))


def artifacts(folder: Path) -> Outcome:
    return _record(folder, store_uri(folder))


def run_dir(folder: Path) -> Outcome:
    return _record(folder, store_uri(folder))


def outbox(folder: Path) -> Outcome:
    """A run whose tracking server cannot be reached: its record goes to the outbox."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = _record(folder, f"http://127.0.0.1:{port}")
    out.files = sorted((folder / "outbox").glob("*.json")) if (folder / "outbox").is_dir() else []
    out.databases = []
    return out


def results_csv(folder: Path) -> Outcome:
    """``dabench grid`` (two predicted points): results.csv under multirun/."""
    from dabench.cli.grid import main

    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["--quiet", *PREDICT, "run.batch_size=1,2", f"tracking.uri={store_uri(folder)}"])
    lines = [line for line in err.getvalue().splitlines() if line.startswith("dabench")]
    files = sorted((folder / "multirun").rglob("results.csv"))
    return Outcome(f"exit {code}", lines[-1] if lines else "", [folder / "mlruns" / "mlflow.db"], files)


def calibration_cache(folder: Path) -> Outcome:
    """A CPU calibration that is cached (the measured rates given, so nothing is timed)."""
    import logging

    from dabench.host import calibrate

    calibrate._PROCESS.clear()
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logging.getLogger("dabench").addHandler(handler)
    try:
        cal = calibrate.calibrate("copy", lambda: [1.0e10] * (calibrate.MIN_REPEATS + 2), recalibrate=True, load=0.0)
    finally:
        logging.getLogger("dabench").removeHandler(handler)
    status = "ok" if cal.value == 1.0e10 else "wrong"
    return Outcome(status, seen[-1] if seen else "", [], [calibrate.calibration_cache()])


def schema_cache(folder: Path) -> Outcome:
    """A run recorded into a new local store, whose empty schema is made and cached first."""
    import logging

    from dabench.tracking.store import template_path

    (folder / "mlruns" / "mlflow.db").unlink(missing_ok=True)  # a new store
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logging.getLogger("dabench").addHandler(handler)
    try:
        out = _record(folder, store_uri(folder))
    finally:
        logging.getLogger("dabench").removeHandler(handler)
    out.message = seen[-1] if seen else out.message
    if template_path().exists():
        out.databases.append(template_path())
    return out


def study_storage(folder: Path) -> Outcome:
    """A study opened on its SQLite storage and one trial told (the sweeper's calls)."""
    import optuna

    from dabench.tune import driver
    from dabench.tune.outcome import JobOutcome
    from dabench.tune.study import fail_stale_trials, mark_owner, open_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    db = folder / "mlruns" / "optuna.db"
    out = Outcome("ok", "", [db], [])
    try:
        study = open_study("matrix", f"sqlite:///{db}", "maximize", optuna.samplers.RandomSampler(seed=0))
        fail_stale_trials(study)  # the next command: trials of a killed sweep end failed
        trial = study.ask()
        mark_owner(trial)
        driver.tell(study, trial, JobOutcome(1.0, "ok", mode="predict"))
    except OSError as error:
        out.status, out.message = "failed", str(error)
    return out


def exports(folder: Path) -> Outcome:
    """``dabench compare A B --csv PATH`` on the template's two runs."""
    from dabench.cli.compare import main

    ids = json.loads((folder / "template_ids.json").read_text())
    err, target = io.StringIO(), folder / "exports" / "compare.csv"
    with redirect_stderr(err), redirect_stdout_quiet():
        code = main([*ids, "--csv", str(target), "--tracking-uri", store_uri(folder)])
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    return Outcome(f"exit {code}", lines[-1] if lines else "", [folder / "mlruns" / "mlflow.db"], [target])


def source_tree(folder: Path) -> Outcome:
    """``dabench fit --write``'s writer of a constant set, pointed at a file in the folder."""
    from dabench.fit import constant_set

    target = folder / "sets" / "matrix.json"
    try:
        constant_set.write({"name": "matrix", "platforms": {}}, str(target))
    except OSError as error:
        return Outcome("failed", str(error), [], [target])
    return Outcome("ok", "", [], [target])


def redirect_stdout_quiet():
    from contextlib import redirect_stdout

    return redirect_stdout(io.StringIO())


RECIPES: dict[str, Callable[[Path], Outcome]] = {
    "store": store,
    "artifacts": artifacts,
    "run_dir": run_dir,
    "results_csv": results_csv,
    "calibration_cache": calibration_cache,
    "schema_cache": schema_cache,
    "outbox": outbox,
    "study_storage": study_storage,
    "exports": exports,
    "source_tree": source_tree,
}


# --- one recipe per command that writes (the command fault matrix, test_command_faults.py) -------


def _command(folder: Path, module: str, argv: list[str], fault: str | None) -> Outcome:
    """``dabench <command> argv`` (dabench/cli/main.py) in process, with ``$DABENCH_FAULT=fault``
    armed for the command alone (the recipe's own setup writes are not counted): its exit status,
    its last line on stderr, the store, and every JSON/CSV/YAML file under the folder."""
    import importlib

    from dabench.cli.main import main
    from dabench.runtime import faults

    declared = importlib.import_module(module).main
    err, out = io.StringIO(), io.StringIO()
    faults._calls.clear()
    if fault:
        os.environ[faults.ENV] = fault
    with redirect_stderr(err), redirect_stdout(out):
        try:
            code = main([_name(module), *argv])
        except SystemExit as done:
            code = done.code
        finally:
            os.environ.pop(faults.ENV, None)
    lines = [line for line in err.getvalue().splitlines() if line.strip() and not line.startswith("[")]
    lines = lines or [line for line in out.getvalue().splitlines() if line.startswith("dabench")]  # a report line
    files = [p for p in folder.rglob("*") if p.suffix in (".json", ".csv", ".yaml") and p.is_file()]
    db, written = folder / "mlruns" / "mlflow.db", declared.written(declared.parse(argv))
    return Outcome(f"exit {code}", lines[-1] if lines else "", [db], files, declared=written)


def _name(module: str) -> str:
    from dabench.cli.main import COMMANDS

    return next(name for name, (path, _) in COMMANDS.items() if path == module)


def cmd_grid(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench grid`` of two predicted points."""
    argv = ["--quiet", *PREDICT, "run.batch_size=1,2", f"tracking.uri={store_uri(folder)}"]
    return _command(folder, "dabench.cli.grid", argv, fault)


def cmd_advise(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench advise`` on one platform, a few trials, its CSV and its MLflow record."""
    argv = ["model=tiny", "tokens=1e9", "platforms=ipu", "trials=3", f"csv={folder / 'advice.csv'}"]
    return _command(folder, "dabench.cli.advise", [*argv, f"tracking_uri={store_uri(folder)}"], fault)


def cmd_calibrate(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench calibrate --recalibrate --precision fp32``, the measured rates given (nothing timed)."""
    from dabench.host import calibrate

    calibrate._PROCESS.clear()
    rates = [1.0e10] * (calibrate.MIN_REPEATS + 2)
    saved = calibrate.matmul_samples, calibrate.copy_samples, calibrate.load_per_core
    calibrate.matmul_samples = lambda precision, *a, **k: rates
    calibrate.copy_samples = lambda *a, **k: rates
    calibrate.load_per_core = lambda: 0.0
    try:
        return _command(folder, "dabench.cli.calibrate", ["--recalibrate", "--precision", "fp32"], fault)
    finally:
        calibrate.matmul_samples, calibrate.copy_samples, calibrate.load_per_core = saved


def setup_doctor(folder: Path) -> None:
    """A run left RUNNING by a process of this host that is gone (once per folder)."""
    from dabench.tracking.reaper import HOST_TAG, PID_TAG, hostname
    from dabench.tracking.store import client_and_experiment

    marker = folder / "left_running.txt"
    if not marker.exists():
        client, experiment = client_and_experiment(store_uri(folder), "dabench")
        tags = {HOST_TAG: hostname(), PID_TAG: "999999999"}
        marker.write_text(client.create_run(experiment, run_name="left running", tags=tags).info.run_id)


def cmd_doctor(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench doctor`` ending a run left RUNNING by a process of this host that is gone."""
    setup_doctor(folder)
    return _command(folder, "dabench.cli.doctor", ["--uri", store_uri(folder)], fault)


def cmd_sync(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench sync`` replaying one closed journal kept for the store."""
    setup_sync(folder)
    argv = ["--tracking-uri", store_uri(folder), "--outbox", str(folder / "outbox")]
    return _command(folder, "dabench.cli.sync", argv, fault)


def setup_sync(folder: Path) -> None:
    """One closed journal kept in the outbox for the store (once per folder)."""
    from dabench.core.status import Status
    from dabench.tracking.outbox import Journal

    if not (folder / "outbox").exists():
        journal = Journal.new(
            uri=store_uri(folder),
            experiment="dabench",
            run_name="kept",
            start_ms=1,
            tags={"dabench.mode": "predict"},
            parent=None,
            folder=folder / "outbox",
        )
        journal.log(params={"run.batch_size": 4}, metrics={"throughput.samples_per_s": 12.5})
        journal.close(Status.OK, "", 2, True)


def cmd_fit(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench fit --from-mlflow`` on the template's synthetic measured CPU runs (experiment
    ``synthetic``): the constant set's file and its own MLflow run."""
    os.environ["DABENCH_CONSTANTS_DIR"] = str(folder / "constants")
    argv = ["--from-mlflow", "synthetic", "--tracking-uri", store_uri(folder), "--name", "matrix"]
    return _command(folder, "dabench.cli.fit", argv, fault)


def cmd_compare(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench compare --csv`` of the template's first two runs."""
    with sqlite3.connect(folder / "mlruns" / "mlflow.db") as db:
        ids = [row[0] for row in db.execute("select run_uuid from runs order by start_time limit 2")]
    argv = [*ids, "--csv", str(folder / "compare.csv"), "--tracking-uri", store_uri(folder)]
    return _command(folder, "dabench.cli.compare", argv, fault)


def cmd_ingest(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench ingest --log`` of a small Cerebras compile report: its run and its artifacts."""
    report = Path(__file__).resolve().parents[1] / "vendors" / "fixtures" / "compile_report_small.txt"
    return _command(folder, "dabench.cli.ingest", [str(report), "--log", "--tracking-uri", store_uri(folder)], fault)


def cmd_report(folder: Path, fault: str | None = None) -> Outcome:
    """``dabench report --out`` of the template's runs: the page, its figures and runs.csv."""
    argv = ["--out", str(folder / "report"), "--tracking-uri", store_uri(folder)]
    return _command(folder, "dabench.cli.report", argv, fault)


#: what a recipe sets up before its command (done by the recipe too, once per folder)
COMMAND_SETUP: dict[str, Callable[[Path], None]] = {"doctor": setup_doctor, "sync": setup_sync}
#: command -> its recipe: every subcommand that writes (the matrix finds which sinks each writes)
COMMAND_RECIPES: dict[str, Callable[[Path, str | None], Outcome]] = {
    "grid": cmd_grid,
    "advise": cmd_advise,
    "calibrate": cmd_calibrate,
    "doctor": cmd_doctor,
    "sync": cmd_sync,
    "fit": cmd_fit,
    "compare": cmd_compare,
    "ingest": cmd_ingest,
    "report": cmd_report,
}
#: commands that write with no recipe here, and why
EXEMPT = {
    "ui": "serves until stopped; its one write, the saved view, is the store's (the store recipe)",
    "findings": "its one write (--write) is docs/perfmodel.md of the checkout: the source_tree recipe",
    "docs": "its one write (--write) is docs/ of the checkout: the source_tree recipe",
}


def add_synthetic_runs(path: Path) -> None:
    """Synthetic measured CPU runs (tests/fit/helpers.py, labelled synthetic) in the store at ``path``."""
    from tests.fit.helpers import cpu_grid, cpu_runs, record

    record(f"sqlite:///{path}", cpu_runs(cpu_grid(layers=(2, 4), hidden=(128,), precisions=("fp32",))), "synthetic")


def whole(path: Path) -> bool:
    """The file parses as its kind (JSON, YAML, CSV)."""
    text = path.read_text()
    if path.suffix == ".json":
        json.loads(text)
    elif path.suffix == ".yaml":
        import yaml

        yaml.safe_load(text)
    elif path.suffix == ".csv":
        import pandas as pd

        pd.read_csv(io.StringIO(text))
    return True


def runs_named(db: Path, name: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("select count(*) from runs where name = ?", (name,)).fetchone()[0]


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def running(db: Path) -> int:
    """RUNNING MLflow runs, or RUNNING Optuna trials, in ``db``."""
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("select name from sqlite_master where type='table'")}
        if "runs" in tables:
            return conn.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0]
        if "trials" in tables:
            return conn.execute("select count(*) from trials where state = 'RUNNING'").fetchone()[0]
    return 0


def run_status(db: Path, run_id: str) -> tuple[str, str | None, str | None]:
    """(MLflow state, dabench.status, dabench.reason) of ``run_id``."""
    with sqlite3.connect(db) as conn:
        state = conn.execute("select status from runs where run_uuid = ?", (run_id,)).fetchone()[0]
        tags = dict(conn.execute("select key, value from tags where run_uuid = ?", (run_id,)).fetchall())
    return state, tags.get("dabench.status"), tags.get("dabench.reason")


#: a command recipe run by :func:`main` arms this fault for the command alone (not its setup)
COMMAND_FAULT_ENV = "DABENCH_TEST_COMMAND_FAULT"


def main() -> None:
    """``python -m tests.reliability.recipes SINK FOLDER [SINK FOLDER ...]``: run each recipe in
    its folder (chdir and environment first), in this one process; one JSON line per recipe.
    ``command:NAME`` runs a command recipe with ``$DABENCH_TEST_COMMAND_FAULT`` as its fault."""
    args = sys.argv[1:]
    for name, folder in zip(args[::2], args[1::2], strict=True):
        folder = Path(folder)
        os.chdir(folder)
        os.environ.update(environ(folder))
        if name.startswith("command:"):
            out = COMMAND_RECIPES[name.partition(":")[2]](folder, os.environ.pop(COMMAND_FAULT_ENV, None))
        else:
            out = RECIPES[name](folder)
        print(json.dumps({"sink": name, "status": out.status, "message": out.message}), flush=True)


if __name__ == "__main__":
    main()
