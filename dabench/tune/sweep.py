"""A study's sweep, whatever launches its jobs: :func:`run_study` checks the settings and stores
(one line, exit 2, before anything is created), opens or resumes the study, finds or creates its
MLflow parent run, runs the trials in batches through the caller's ``launch`` (:class:`SweepJobs`)
and writes the study's result. Each job's overrides carry the parent run id and tracking URI; its
outcome comes back as a JobOutcome. The Hydra glue is hydra_plugins/dabench_optuna_sweeper/.
"""

from __future__ import annotations

import functools
import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import optuna

from dabench.core.status import ConfigError, DabenchError, Status
from dabench.pipeline.preflight import check_store, check_study_storage, cpu_cores, refuse
from dabench.report.results import record_sweep_results
from dabench.report.sweep_callback import current as sweep_progress
from dabench.runtime import interrupts
from dabench.runtime.sinks import one_line
from dabench.tracking.describe import requested_mode
from dabench.tracking.redact import install_log_redaction, redact_overrides, redact_text, redact_uri
from dabench.tracking.store import tracking_uri
from dabench.tune.best import format_summary, summarize
from dabench.tune.driver import TrialSpace, run_trials
from dabench.tune.locking import study_lock
from dabench.tune.outcome import JobOutcome
from dabench.tune.parent_run import close_parent, log_study, study_parent, write_study_files
from dabench.tune.sampling import make_sampler
from dabench.tune.settings import SPACE_ATTR, SweepSettings, check_resume, check_settings, space_fingerprint
from dabench.tune.space import ParsedSpace, override_value, params_to_overrides, parse_overrides
from dabench.tune.structured import load_space
from dabench.tune.study import (
    MODE_ATTR,
    OVERRIDES_ATTR,
    REASON_ATTR,
    STATUS_ATTR,
    default_storage,
    derive_study_name,
    fail_stale_trials,
    open_study,
    trials_done,
)

log = logging.getLogger(__name__)

LOCAL_LAUNCHERS = ("LocalLauncher", "JoblibLauncher")  #: launchers that run their jobs on this machine
REMOTE_LAUNCHERS = ("SlurmLauncher", "RayAWSLauncher")  #: launchers that run them on other machines


@dataclass
class SweepJobs:
    """What the caller knows of this invocation and how it launches jobs."""

    task_config: dict  #: the composed task config (no ``hydra`` node)
    launch_dir: Path
    launch: Callable[[list[list[str]], int], list[JobOutcome]]  #: (overrides per job, first index) -> outcomes
    sweep_dir: Callable[[], Path]  #: makes and returns this worker's sweep folder
    launcher: str = "LocalLauncher"  #: the launcher's class name
    ray_address: str = "local"  #: ``hydra.launcher.ray.init.address``
    cpus_per_task: int = 1  #: ``hydra.launcher.cpus_per_task``
    searchpath: list[str] = field(default_factory=list)  #: ``hydra.searchpath=`` overrides, for the best command


def refuse_local_store(uri: str, launcher: str, ray_address: str = "local") -> None:
    """Jobs on other machines (Slurm, a Ray cluster joined by address) cannot record into a
    local SQLite or file store: ConfigError before any trial, naming the fix."""
    remote = launcher in REMOTE_LAUNCHERS or (
        launcher == "RayLauncher" and not ray_address.startswith(("local", "127.0.0.1", "localhost"))
    )
    if remote and uri.split(":", 1)[0] in ("sqlite", "file"):
        raise ConfigError(
            "tracking.uri",
            redact_uri(uri),
            f"a tracking server its jobs can reach ({launcher} runs them on other machines): "
            "tracking.uri=http://<host>:5000, see docs/scale-out.md",
        )


def batch_size(settings: SweepSettings, jobs: SweepJobs) -> int:
    """``n_jobs``, capped at this machine's cores (over cpus_per_task) for a launcher that runs
    its jobs here (submitit local, joblib), unless ``allow_oversubscribe``."""
    if settings.allow_oversubscribe or jobs.launcher not in LOCAL_LAUNCHERS:
        return settings.n_jobs
    cores = cpu_cores()
    cap = max(1, cores // max(1, int(jobs.cpus_per_task)))
    if settings.n_jobs > cap:
        log.warning(
            "hydra.sweeper.n_jobs=%d capped at %d: %s runs jobs on this machine's %d cores "
            "(hydra.sweeper.allow_oversubscribe=true to lift)",
            settings.n_jobs,
            cap,
            jobs.launcher,
            cores,
        )
    return min(settings.n_jobs, cap)


def search_space(settings: SweepSettings, arguments: Sequence[str], task_config: Mapping[str, Any]) -> TrialSpace:
    """The sweep's ``params`` with the command line's sweeps and values replacing the entries of
    their keys, and the structured hook (ConfigError naming a bad entry)."""
    try:
        from_config = parse_overrides(params_to_overrides(settings.params))
    except DabenchError:
        raise
    except Exception as error:  # Hydra's grammar refused an entry
        raise ConfigError(
            "hydra.sweeper.params",
            settings.params,
            f"{{key: choice(...), range(...), interval(...) or a value}} ({str(error).splitlines()[0]})",
        ) from None
    from_cli = parse_overrides(list(arguments))

    def key(text: str) -> str:
        return text.split("=", 1)[0].lstrip("+~")

    cli_keys = {d.name for d in from_cli.dimensions} | {key(text) for text in from_cli.fixed}
    dims = [d for d in from_config.dimensions if d.name not in cli_keys] + list(from_cli.dimensions)
    fixed = [text for text in from_config.fixed if key(text) not in cli_keys] + list(from_cli.fixed)
    hook, args = settings.space.hook, settings.space.args
    return TrialSpace(
        parsed=ParsedSpace(dimensions=tuple(dims), fixed=tuple(fixed)),
        structured=load_space(hook, dict(task_config), args) if hook else None,
    )


def _refuse(error: Any, code: int = 2) -> SystemExit:
    """Say ``dabench: <error>`` on stderr; the SystemExit to raise (2: refused settings, 1: a
    folder or storage that cannot be written)."""
    print(f"dabench: {error}", file=sys.stderr, flush=True)
    return SystemExit(code)


def run_study(settings: SweepSettings, arguments: Sequence[str], jobs: SweepJobs) -> dict:
    """Run the study's missing trials (see the module docstring); returns the study's summary."""
    install_log_redaction()  # the launcher logs each job's overrides, tracking.uri included
    interrupts.mask_with(redact_text)  # the resume line after Ctrl-C shows the command line
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    task = jobs.task_config
    try:  # one line naming the field, the value and what is valid, exit 2, before anything is created
        sampler, space = check_settings(settings), search_space(settings, arguments, task)
    except ConfigError as error:
        raise _refuse(error) from None
    name = settings.study_name or derive_study_name(
        settings.sweep_name, (task.get("model") or {}).get("name"), arguments
    )
    tracking = task.get("tracking") or {}
    timeout = float(tracking.get("timeout_s") or 3.0)
    try:
        storage = settings.storage or default_storage(jobs.launch_dir)
        # the study storage and (tracking on) the tracking store open: a corrupt database, a missing
        # driver or an unreachable server is one line, exit 2, before the study or its parent is touched
        problems = check_study_storage(storage, timeout)
        if tracking.get("enabled", True):
            problems += check_store(tracking_uri(tracking.get("uri")), "tracking.uri", timeout)
        refuse(problems)
        study = open_study(name, storage, settings.direction, sampler)
    except OSError as error:  # the study storage cannot be written (runtime/sinks.py): one line, exit 1
        raise _refuse(f"study {name}: {one_line(error)}", 1) from None
    fingerprint = space_fingerprint(space, settings.space.hook, settings.space.args, task)
    try:  # a resumed study keeps its search space unless allow_space_change
        if check_resume(study, fingerprint, settings.allow_space_change):
            study.set_user_attr(SPACE_ATTR, fingerprint)
    except ConfigError as error:
        raise _refuse(error) from None
    existing = len(study.get_trials(deepcopy=False))
    if existing and settings.seed is not None:  # a resumed study must not replay the first run's draws
        study.sampler = make_sampler(
            settings.sampler, settings.seed + existing, settings.sampler_options, settings.failed_as_infeasible
        )
    study.set_user_attr("dabench.command_overrides", redact_overrides([*jobs.searchpath, *arguments]))
    lock = functools.partial(study_lock, storage, f"dabench-study:{name}")
    with lock():
        stale = fail_stale_trials(study, locked=True)
    if stale:
        log.warning(
            "study %s: trials %s were left running by a sweep that ended; marked failed (interrupted)", name, stale
        )
    done = trials_done(study)
    left = max(0, settings.n_trials - done)
    if sweep_progress() is not None:  # the progress line counts the trials this sweep runs
        sweep_progress().set_total(left)
    log.info(
        "study %s in %s: %d of %d trials done, running %d", name, redact_uri(storage), done, settings.n_trials, left
    )

    parent, extra = None, []
    if tracking.get("enabled", True):
        uri = tracking_uri(tracking.get("uri"))
        refuse_local_store(uri, jobs.launcher, jobs.ray_address)
        parent = study_parent(study, uri, tracking.get("experiment") or "dabench", storage, lock)
        parent.log(tags={"dabench.mode": requested_mode((task.get("hardware") or {}).get("mode"))})
        extra = [f"++tracking.uri={override_value(uri)}", f"++tracking.parent_run_id={parent.run_id}"]
        log.info("study %s: MLflow parent run %s (%s)", name, parent.run_id, redact_uri(uri))
    try:
        sweep_dir = jobs.sweep_dir()
    except OSError as error:  # the sweep folder cannot be made (runtime/sinks.py): one line, exit 1
        close_parent(parent, study, interrupted=True)
        raise _refuse(f"study {name}: {one_line(error)}", 1) from None

    try:
        run_trials(study, space, settings.n_trials, batch_size(settings, jobs), jobs.launch, lock=lock, extra=extra)
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):  # Ctrl-C, SIGTERM: the line says how far and how to resume
            try:
                done = trials_done(study)
            except Exception:
                done = None
            interrupts.progress(done=done, total=settings.n_trials, unit="trials", resume=interrupts.command_line())
        close_parent(parent, study, interrupted=True)
        raise
    summary = summarize(study)
    try:
        for note in write_study_files(study, summary, sweep_dir):
            log.info(note)
    except OSError as error:  # the trials are recorded; only the summary files are missing
        log.warning("could not write the study's files: %s", error)
    if parent is not None:
        with lock():  # workers ending together write the one parent in turn (MLflow tag writes race)
            try:
                log_study(parent, study, summary, storage)
            except Exception as error:  # the trials are recorded; only the parent's summary is missing
                log.warning("could not log the study's result to its MLflow parent run: %s", error)
    title = f"study {name} results"
    try:  # the results table: printed, results.csv in the sweep folder (and on the parent run)
        table = (
            record_sweep_results(parent.client, parent.run_id, sweep_dir, title)
            if parent is not None
            else _untracked_results(study, sweep_dir, title)  # not recorded: from the study's own trials
        )
        print(table, flush=True)
    except Exception as error:  # the trials are recorded; only the table is missing
        log.warning("could not write the study's results table: %s", one_line(error))
    close_parent(parent, study)
    print(format_summary(summary), flush=True)
    return summary.to_dict()


def _untracked_results(study, folder: Path, title: str) -> str:
    """The results table of a study run with ``tracking.enabled=false``: one row per trial from
    its recorded overrides, status, reason, mode and objective; also ``folder/results.csv``."""
    import pandas as pd

    from dabench.report.frame import normalize
    from dabench.report.results import render_results, write_results_csv

    rows = [
        {
            "run_id": "",
            "run_name": " ".join(trial.user_attrs.get(OVERRIDES_ATTR) or []) or f"trial {trial.number}",
            "tags.dabench.status": trial.user_attrs.get(STATUS_ATTR) or trial.state.name.lower(),
            "tags.dabench.mode": trial.user_attrs.get(MODE_ATTR),
            "tags.dabench.reason": trial.user_attrs.get(REASON_ATTR) or "",
            "metrics.throughput.samples_per_s": trial.value
            if trial.user_attrs.get(STATUS_ATTR) == Status.OK.value and trial.value is not None
            else math.nan,
        }
        for trial in study.get_trials(deepcopy=False)
    ]
    frame = normalize(pd.DataFrame(rows))
    path = write_results_csv(frame, folder / "results.csv")
    return render_results(frame, f"{title} (not recorded: tracking.enabled=false)") + f"\nresults.csv: {path}"
