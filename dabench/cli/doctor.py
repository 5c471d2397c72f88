"""``python -m dabench doctor``: check the run store and the studies, fix what was left hanging.

Prints one line per check and per fix; exit 0 when the stores are healthy after the fixes, 1 when
a store is unusable, 2 for bad arguments. Details: docs/reliability.md, "2. No run left RUNNING";
docs/fitting.md, "Drift".
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from typing import Callable

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import TEXT
from dabench.core.status import mlflow_state
from dabench.fit.machine import drift
from dabench.fit.runs import points_from_runs
from dabench.perfmodel import constants
from dabench.tracking.reaper import reap, running_runs
from dabench.tracking.redact import redact_uri
from dabench.tracking.store import open_client, open_study_storage, sqlite_path
from dabench.tracking.writes import now_ms
from dabench.tune.locking import study_lock

Say = Callable[[str], None]


def _why(error: Exception) -> str:
    return f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"


def check_sqlite_file(url: str, what: str, say: Say) -> bool | None:
    """True: a healthy SQLite file (SQLite's ``PRAGMA integrity_check`` says ok); False: unusable
    (what the check, or opening the file, reports); None: not a SQLite URL (or no file)."""
    path = sqlite_path(url)
    if path is None:
        return None
    if not path.exists():
        say(f"{what} {path}: does not exist (nothing to check)")
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
            found = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as error:
        found = [str(error)]
    if found != ["ok"]:
        say(
            f"{what} {path}: CORRUPT ({'; '.join(found[:5])}); move it aside (mv {path} {path}.corrupt) and start "
            f"a new one, or restore a backup"
        )
        return False
    say(f"{what} {path}: integrity ok")
    return True


def check_tracking(uri: str, *, all_hosts: bool, dry_run: bool, say: Say) -> bool:
    """The MLflow store (integrity, MLflow opens it) and its runs left RUNNING. False: unusable."""
    healthy = check_sqlite_file(uri, "tracking store", say)
    if healthy is False or (healthy is None and sqlite_path(uri) is not None):
        return healthy is None
    try:  # read-only under --dry-run: a store of another kind is said so, never given MLflow's schema
        client = open_client(uri)
        experiments = client.search_experiments()
    except Exception as error:
        say(f"tracking store {redact_uri(uri)}: MLflow cannot open it {_why(error)}")
        return False
    running = running_runs(client, None)
    say(
        f"tracking store {redact_uri(uri)}: MLflow opens it ({len(experiments)} experiments, "
        f"{len(running)} runs RUNNING)"
    )
    fixed = reap(client, all_hosts=all_hosts, dry_run=dry_run)
    for item in fixed:
        say(f"{'would fix' if dry_run else 'fixed'}: {item}")
    left = len(running) - len(fixed)
    if left:
        say(
            f"left alone: {left} RUNNING runs whose processes still run"
            + ("" if all_hosts else f" or belong to other hosts than {socket.gethostname()} (--all-hosts to end those)")
        )
    if not fixed:
        say("no runs left RUNNING by dead processes")
    return True


RECENT_RUNS = 200  #: measured runs of the store the drift check reads (most recent first)


def check_constants(uri: str, say: Say) -> list:
    """Drift of each banded constant set against the recent measured runs (docs/fitting.md,
    "Drift"): one line per set and platform, a warning only. Returns the :class:`Drift` records."""
    sets = {constants.PUBLISHED: dict(constants.load())}
    folder = constants.user_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:  # a regular file, bounded, checked (core/readers.py): a FIFO here must not hang the doctor
            sets[path.stem] = constants.ConstantSet.read(path)
        except (OSError, ValueError) as error:
            say(f"constant set skipped: {error}")
    banded = {
        n: d
        for n, d in sets.items()
        if any((e.get("band") or {}).get("factor") for e in (d.get("platforms") or {}).values())
    }
    store = sqlite_path(uri)
    if not banded or (store is not None and not store.exists()):  # no store: no measured runs (MLflow would make one)
        return []
    try:
        client = open_client(uri)
        ids = [e.experiment_id for e in client.search_experiments()]
        found = (
            client.search_runs(
                ids,
                "tags.`dabench.mode` = 'measure' and tags.`dabench.status` = 'ok'",
                max_results=RECENT_RUNS,
                order_by=["attributes.start_time DESC"],
            )
            if ids
            else []
        )
    except Exception as error:
        say(f"constant sets: could not read the recent measured runs ({type(error).__name__}): drift not checked")
        return []
    points, _ = points_from_runs(
        [
            {"run_id": r.info.run_id, "tags": r.data.tags, "params": r.data.params, "metrics": r.data.metrics}
            for r in found
        ]
    )
    out = [d for name, data in banded.items() for d in drift(name, data, points)]
    for d in (d for d in out if d.n):
        rate = f"{d.outside}/{d.n} recent measured {d.arch} runs outside its {100 * d.nominal:.0f}% band"
        if d.drifted:
            say(
                f"DRIFT: constant set {d.name} ({d.arch}): {rate} (expected at most {100 * (1 - d.nominal):.0f}%, "
                f"binomial p = {d.p_value:.2g}); refit it: python -m dabench fit --from-mlflow SELECTION "
                f"--name {d.name if d.name != constants.PUBLISHED else 'NAME'} (docs/fitting.md)"
            )
        else:
            say(f"constant set {d.name} ({d.arch}): {rate}: within the nominal rate")
    return out


def check_studies(storage: str, *, dry_run: bool, say: Say, tracking: str) -> bool:
    """Every study of the Optuna storage: stale RUNNING trials failed and re-queued; a parent run
    in ``tracking`` left RUNNING by a sweep of this host that is gone, with no trial running, ended
    KILLED. False: unusable."""
    if check_sqlite_file(storage, "study storage", say) is False:
        return False
    import warnings

    import optuna
    from optuna.trial import TrialState

    from dabench.tune.parent_run import PARENT_ATTR, PARENT_OWNER_ATTR, PARENT_URI_ATTR, _owner_gone
    from dabench.tune.study import GRACE_S, HEARTBEAT_S, fail_stale_trials

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = open_study_storage(
                storage, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S, skip_table_creation=True
            )
            names = optuna.get_all_study_names(storage=store)
    except Exception as error:
        say(f"study storage {redact_uri(storage)}: Optuna cannot open it {_why(error)}")
        return False
    say(f"study storage {redact_uri(storage)}: Optuna opens it ({len(names)} studies)")
    for name in names:
        study = optuna.load_study(study_name=name, storage=store)
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if dry_run:
            if running:
                say(f"study {name}: {len(running)} trials RUNNING (dry run: not checked further)")
            continue
        with study_lock(storage, f"dabench-study:{name}"):
            stale = fail_stale_trials(study, locked=True)
        if stale:
            say(
                f"fixed: study {name}: trials {stale} RUNNING with their sweep gone -> failed (interrupted, not "
                f"counted), their settings queued to run again"
            )
        attrs = study.user_attrs
        parent, owner = attrs.get(PARENT_ATTR), attrs.get(PARENT_OWNER_ATTR)
        if (
            not parent
            or attrs.get(PARENT_URI_ATTR) != tracking
            or not _owner_gone(owner)
            or study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        ):
            continue
        try:
            client = open_client(tracking)
            if client.get_run(parent).info.status != "RUNNING":
                continue
            client.set_terminated(parent, status=mlflow_state("interrupted"), end_time=now_ms())
        except Exception as error:
            say(f"fixed: study {name}: could not end its parent run {parent}: {error}")
        else:
            say(f"fixed: study {name}: parent run {parent} RUNNING with its sweep ({owner}) gone -> KILLED")
    return True


@command(
    "doctor",
    __doc__.split("\n\n")[0],
    {
        "--uri": arg(TEXT, "MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db)"),
        "--storage": arg(TEXT, "Optuna storage URL (default: ./mlruns/optuna.db when it exists)"),
        "--all-hosts": flag("also end RUNNING runs of other hosts and runs without owner (you know they are gone)"),
        "--dry-run": flag("report, fix nothing"),
    },
    writes={"store": lambda args: not args.dry_run, "study_storage": lambda args: not args.dry_run},
)
def main(args) -> int:
    say: Say = lambda line: print(f"doctor: {line}", flush=True)
    uri = args.uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlruns' / 'mlflow.db'}"
    ok = check_tracking(uri, all_hosts=args.all_hosts, dry_run=args.dry_run, say=say)
    if ok:
        check_constants(uri, say)
    path = Path.cwd() / "mlruns" / "optuna.db"
    storage = args.storage or (f"sqlite:///{path}" if path.exists() else None)
    if storage:
        ok = check_studies(storage, dry_run=args.dry_run, say=say, tracking=uri) and ok
    else:
        say("no study storage (./mlruns/optuna.db absent, --storage not given)")
    say("healthy" if ok else "problems found (see above)")
    return 0 if ok else 1
