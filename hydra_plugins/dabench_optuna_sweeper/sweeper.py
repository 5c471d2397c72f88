"""The Sweeper: Hydra glue around dabench.tune's ask/tell loop.

``setup`` keeps the composed config and creates the configured launcher (basic, joblib,
submitit, ray, ...); ``sweep`` opens (or resumes) the study, runs trials in batches of ``n_jobs``
through the launcher, tells Optuna each job's outcome, then writes the study's result into the
sweep folder and its MLflow parent run. See docs/tuning.md and docs/scale-out.md.

Nothing travels through a shared disk or the environment: each job's config carries the study's
MLflow parent run id (``tracking.parent_run_id``), the tracking URI (``tracking.uri``) and the
study name (``tracking.tags.optuna_study``); each job's whole outcome (objective, status, reason,
mode) comes back in Hydra's JobReturn (the task function returns a
:class:`dabench.tune.outcome.JobOutcome`). Several workers may run the same study at once (see
dabench.tune.driver); each uses its own sweep folder.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any, List, Optional

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from dabench.config.build import build_run_config
from dabench.core.status import ConfigError, DabenchError, Status, is_ok
from dabench.pipeline.preflight import check_store, check_study_storage, format_problems
from dabench.report.sweep_callback import current as sweep_progress
from dabench.runtime import interrupts
from dabench.runtime.sinks import make_dir, one_line
from dabench.tracking.describe import requested_mode
from dabench.tracking.redact import (
    install_log_redaction,
    redact_hydra_output,
    redact_overrides,
    redact_text,
    redact_uri,
)
from dabench.tracking.store import tracking_uri
from dabench.tune.locking import study_lock
from dabench.tune.outcome import JobOutcome
from dabench.tune.structured import load_space
from hydra_plugins.dabench_optuna_sweeper import config as _config  # noqa: F401  registers the config

log = logging.getLogger(__name__)


class DabenchOptunaSweeper(Sweeper):
    def __init__(
        self,
        sweep_name: Optional[str] = None,
        study_name: Optional[str] = None,
        storage: Optional[str] = None,
        direction: str = "maximize",
        n_trials: int = 20,
        n_jobs: int = 1,
        sampler: str = "tpe",
        seed: Optional[int] = None,
        sampler_options: Optional[dict] = None,
        failed_as_infeasible: bool = True,
        params: Optional[dict] = None,
        space: Optional[dict] = None,
        allow_oversubscribe: bool = False,
        allow_space_change: bool = False,
    ) -> None:
        self.sweep_name, self.study_name, self.storage = sweep_name, study_name, storage
        self.direction, self.n_trials, self.n_jobs = direction, n_trials, n_jobs
        self.sampler_name, self.seed = sampler, seed
        self.sampler_options = dict(sampler_options or {})
        self.failed_as_infeasible = failed_as_infeasible
        self.allow_oversubscribe, self.allow_space_change = allow_oversubscribe, allow_space_change
        self.params = dict(params or {})
        space = dict(space or {})
        self.space_hook, self.space_args = space.get("hook"), dict(space.get("args") or {})
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None
        self.launcher = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from hydra.core.plugins import Plugins

        self.hydra_context, self.config = hydra_context, config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    # ------------------------------------------------------------------ helpers

    def _refuse_local_store_for_remote_jobs(self, uri: str) -> None:
        """Jobs on other machines (Slurm, a Ray cluster joined by address) cannot record into a
        local SQLite or file store: refuse before any trial, naming the fix."""

        kind = type(self.launcher).__name__
        address = str(OmegaConf.select(self.config, "hydra.launcher.ray.init.address") or "local")
        remote = kind in ("SlurmLauncher", "RayAWSLauncher") or (
            kind == "RayLauncher" and not address.startswith(("local", "127.0.0.1", "localhost"))
        )
        if remote and uri.split(":", 1)[0] in ("sqlite", "file"):
            raise ConfigError(
                "tracking.uri",
                redact_uri(uri),
                f"a tracking server its jobs can reach ({kind} runs them on other machines): "
                "tracking.uri=http://<host>:5000, see docs/scale-out.md",
            )

    def _batch_size(self) -> int:
        """``n_jobs``, capped at this machine's cores (over cpus_per_task) for a launcher that runs
        its jobs here (submitit local, joblib), unless ``allow_oversubscribe``."""
        kind = type(self.launcher).__name__
        if self.allow_oversubscribe or kind not in ("LocalLauncher", "JoblibLauncher"):
            return self.n_jobs
        per_job = OmegaConf.select(self.config, "hydra.launcher.cpus_per_task") or 1
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        cap = max(1, cores // int(per_job))
        if self.n_jobs > cap:
            log.warning(
                "hydra.sweeper.n_jobs=%d capped at %d: %s runs jobs on this machine's %d cores "
                "(hydra.sweeper.allow_oversubscribe=true to lift)",
                self.n_jobs,
                cap,
                kind,
                cores,
            )
        return min(self.n_jobs, cap)

    def _task_config(self) -> dict[str, Any]:
        """The composed task config (no ``hydra`` node) as a plain dict, for the space hook."""
        assert self.config is not None
        return {
            key: OmegaConf.to_container(self.config[key], resolve=True)
            if OmegaConf.is_config(self.config[key])
            else self.config[key]
            for key in self.config
            if key != "hydra"
        }

    def _search_space(self, arguments: List[str]):
        from dabench.tune.driver import TrialSpace
        from dabench.tune.space import ParsedSpace, params_to_overrides, parse_overrides

        try:
            from_config = parse_overrides(params_to_overrides(self.params))
        except DabenchError:
            raise
        except Exception as error:  # Hydra's grammar refused an entry
            raise ConfigError(
                "hydra.sweeper.params",
                self.params,
                f"{{key: choice(...), range(...), interval(...) or a value}} ({str(error).splitlines()[0]})",
            ) from None
        from_cli = parse_overrides(arguments)

        def key(text: str) -> str:
            return text.split("=", 1)[0].lstrip("+~")

        cli_keys = {d.name for d in from_cli.dimensions} | {key(text) for text in from_cli.fixed}
        dims = [d for d in from_config.dimensions if d.name not in cli_keys] + list(from_cli.dimensions)
        fixed = [text for text in from_config.fixed if key(text) not in cli_keys] + list(from_cli.fixed)
        parsed = ParsedSpace(dimensions=tuple(dims), fixed=tuple(fixed))
        structured = load_space(self.space_hook, self._task_config(), self.space_args) if self.space_hook else None
        return TrialSpace(parsed=parsed, structured=structured)

    def _outcome(self, job_return) -> Any:
        """A Hydra JobReturn -> dabench.tune.driver.Outcome: status, reason and mode from the
        returned JobOutcome (or mapping); from the run's result.json only for a task function
        that returns a bare number."""
        from hydra.core.utils import JobStatus

        from dabench.tune.driver import Outcome

        job_dir = getattr(job_return, "working_dir", None)
        if job_return.status == JobStatus.FAILED:
            error = job_return._return_value
            if isinstance(error, SystemExit) and error.code == 2:  # refused by the job's pre-flight
                return Outcome(
                    None,
                    Status.TRACKING_ERROR.value,
                    "the job's pre-flight refused its surroundings (tracking store, artifact or run "
                    "folder); see the job's log",
                    job_dir,
                )
            return Outcome(None, Status.CRASHED.value, f"the job raised {type(error).__name__}: {error}", job_dir)
        value = job_return.return_value
        returned = JobOutcome.from_value(value)
        if returned is not None:
            objective = float(returned)
            status = returned.status
            if math.isfinite(objective) and not is_ok(status):
                objective = float("nan")
            elif not math.isfinite(objective) and is_ok(status):
                status = Status.DIVERGED.value
            return Outcome(objective, status, returned.reason, job_dir, returned.mode)
        try:
            value = float(value)
        except (TypeError, ValueError):
            return Outcome(None, Status.CRASHED.value, f"the task function returned {value!r}, not a number", job_dir)
        status, reason, mode = self._recorded_result(job_return)
        if math.isfinite(value):
            status = Status.OK.value
        elif is_ok(status):
            status, reason = Status.DIVERGED.value, "the run is ok but the task function returned a non-finite value"
        return Outcome(value, status, reason, job_dir, mode)

    def _recorded_result(self, job_return) -> tuple[str, str, str | None]:
        """(status, reason, mode) from the job's artifacts/result.json; without one (bad input
        leaves none), the job's composed config is validated to name the error."""
        job_dir = getattr(job_return, "working_dir", None)
        result = Path(job_dir or ".") / "artifacts" / "result.json"
        if job_dir and result.exists():
            try:
                document = json.loads(result.read_text())
                return (
                    str(document.get("status") or "unknown"),
                    str(document.get("reason") or ""),
                    document.get("mode"),
                )
            except (OSError, ValueError):
                pass
        if job_return.cfg is not None:
            container = {k: v for k, v in OmegaConf.to_container(job_return.cfg, resolve=True).items() if k != "hydra"}
            try:
                build_run_config(container)
            except DabenchError as error:
                return error.status.value, error.reason, None
        return "unknown", f"no result.json in {job_dir}", None

    # ------------------------------------------------------------------ the sweep

    def _preflight(self, storage: str) -> None:
        """The study storage and (when tracking is on) the tracking store open: a corrupt
        database, a missing driver or an unreachable server is one line and exit 2 before the
        study or its parent run is touched (dabench/pipeline/preflight.py)."""
        import sys

        assert self.config is not None
        tracking = self.config.get("tracking") or {}
        timeout = float(tracking.get("timeout_s") or 3.0)
        problems = check_study_storage(storage, timeout)
        if tracking.get("enabled", True):
            problems += check_store(tracking_uri(tracking.get("uri")), "tracking.uri", timeout)
        if problems:
            print(format_problems(problems), file=sys.stderr, flush=True)
            raise SystemExit(2)

    def _checked_settings(self, arguments: List[str]):
        """(sampler, TrialSpace) of valid settings; otherwise one line naming the field, the
        value and what is valid, and exit 2 before the storage is touched
        (dabench/tune/settings.py)."""
        import sys

        from dabench.tune.settings import check_settings

        try:
            sampler = check_settings(
                direction=self.direction,
                n_trials=self.n_trials,
                n_jobs=self.n_jobs,
                seed=self.seed,
                sampler=self.sampler_name,
                sampler_options=self.sampler_options,
                failed_as_infeasible=self.failed_as_infeasible,
                allow_oversubscribe=self.allow_oversubscribe,
                allow_space_change=self.allow_space_change,
                storage=self.storage,
                study_name=self.study_name,
                sweep_name=self.sweep_name,
            )
            return sampler, self._search_space(arguments)
        except ConfigError as error:
            print(f"dabench: {error}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    def _check_resume(self, study, space) -> None:
        """A resumed study keeps its search space (dabench.tune.settings.check_resume): a changed
        one is one line and exit 2, nothing written, unless ``allow_space_change``."""
        import sys

        from dabench.tune.settings import SPACE_ATTR, check_resume, space_fingerprint

        fingerprint = space_fingerprint(space, self.space_hook, self.space_args, self._task_config())
        try:
            record = check_resume(study, fingerprint, self.allow_space_change)
        except ConfigError as error:
            print(f"dabench: {error}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        if record:
            study.set_user_attr(SPACE_ATTR, fingerprint)

    def _own_sweep_dir(self) -> Path:
        """This worker's sweep folder: ``hydra.sweep.dir``, or ``<dir>-<host>-<pid>`` when another
        worker (or an earlier invocation) already holds that folder (mkdir is atomic)."""
        import socket

        from omegaconf import open_dict, read_write

        assert self.config is not None
        launch_dir = Path(self.config.hydra.runtime.cwd)
        folder = Path(str(self.config.hydra.sweep.dir))
        absolute = folder if folder.is_absolute() else launch_dir / folder

        make_dir("run_dir", absolute.parent)
        try:
            return make_dir("run_dir", absolute, exist_ok=False)
        except FileExistsError:
            pass
        mine = Path(f"{folder}-{socket.gethostname()}-{os.getpid()}")
        configs = [self.config] + [
            c for c in (getattr(self.launcher, "config", None),) if c is not None and c is not self.config
        ]
        for config in configs:  # the launcher reads hydra.sweep.dir when it launches
            with read_write(config), open_dict(config):
                config.hydra.sweep.dir = str(mine)
        return mine if mine.is_absolute() else launch_dir / mine

    def sweep(self, arguments: List[str]) -> Any:
        import optuna

        from dabench.tune.best import format_summary, summarize
        from dabench.tune.driver import run_trials
        from dabench.tune.parent_run import close_parent, hide_password, log_study, study_parent, write_study_files
        from dabench.tune.sampling import make_sampler
        from dabench.tune.study import default_storage, derive_study_name, fail_stale_trials, open_study, trials_done

        assert self.config is not None and self.launcher is not None

        install_log_redaction()  # the launcher logs each job's overrides, tracking.uri included

        interrupts.mask_with(redact_text)  # the resume line after Ctrl-C shows the command line
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        launch_dir = Path(self.config.hydra.runtime.cwd)
        sampler, space = self._checked_settings(arguments)  # one line, exit 2, before anything is created
        name = self.study_name or derive_study_name(
            self.sweep_name, OmegaConf.select(self.config, "model.name"), arguments
        )
        try:
            storage = self.storage or default_storage(launch_dir)
            self._preflight(storage)  # a corrupt optuna.db or mlflow.db: one line, exit 2, before the study opens
            study = open_study(name, storage, self.direction, sampler)
        except OSError as error:  # the study storage cannot be written (runtime/sinks.py): one line, exit 1
            print(f"dabench: study {name}: {one_line(error)}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        self._check_resume(study, space)
        existing = len(study.get_trials(deepcopy=False))
        if existing and self.seed is not None:  # a resumed study must not replay the first run's draws
            study.sampler = make_sampler(
                self.sampler_name, self.seed + existing, self.sampler_options, self.failed_as_infeasible
            )
        searchpath = [
            o for o in OmegaConf.select(self.config, "hydra.overrides.hydra") or [] if o.startswith("hydra.searchpath=")
        ]
        study.set_user_attr("dabench.command_overrides", redact_overrides([*searchpath, *arguments]))

        def lock():
            return study_lock(storage, f"dabench-study:{name}")

        with lock():
            stale = fail_stale_trials(study, locked=True)
        if stale:
            log.warning(
                "study %s: trials %s were left running by a sweep that ended; marked failed (interrupted)", name, stale
            )
        done = trials_done(study)

        if sweep_progress() is not None:  # the progress line counts the trials this sweep runs
            sweep_progress().set_total(max(0, self.n_trials - done))
        log.info(
            "study %s in %s: %d of %d trials done, running %d",
            name,
            hide_password(storage),
            done,
            self.n_trials,
            max(0, self.n_trials - done),
        )

        client, parent_id, extra = None, None, []
        tracking = self.config.get("tracking") or {}
        if tracking.get("enabled", True):
            uri = tracking_uri(tracking.get("uri"))
            self._refuse_local_store_for_remote_jobs(uri)
            client, parent_id = study_parent(study, uri, tracking.get("experiment") or "dabench", storage, lock)

            client.set_tag(parent_id, "dabench.mode", requested_mode(OmegaConf.select(self.config, "hardware.mode")))
            from dabench.tune.space import override_value

            extra = [f"++tracking.uri={override_value(uri)}", f"++tracking.parent_run_id={parent_id}"]
            log.info("study %s: MLflow parent run %s (%s)", name, parent_id, hide_password(uri))
        try:
            sweep_dir = self._own_sweep_dir()
        except OSError as error:  # the sweep folder cannot be made (runtime/sinks.py): one line, exit 1
            if client is not None:
                try:
                    close_parent(client, parent_id, study, interrupted=True)
                except Exception as close_error:  # best effort: the reaper ends it otherwise
                    log.warning("could not close the study's MLflow parent run: %s", close_error)
            print(f"dabench: study {name}: {one_line(error)}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None

        def launch(job_overrides: list[list[str]], first_index: int):
            job_overrides = [overrides + extra for overrides in job_overrides]
            self.validate_batch_is_legal(job_overrides)
            try:
                returns = self.launcher.launch(job_overrides, initial_job_idx=first_index)
            finally:
                redact_hydra_output(sweep_dir)  # the launcher's multirun.yaml holds the command's overrides
            return [self._outcome(r) for r in returns]

        try:
            run_trials(study, space, self.n_trials, self._batch_size(), launch, lock=lock)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):  # Ctrl-C, SIGTERM: the line says how far and how to resume
                try:
                    done = trials_done(study)
                except Exception:
                    done = None
                interrupts.progress(done=done, total=self.n_trials, unit="trials", resume=interrupts.command_line())
            if client is not None:
                try:
                    close_parent(client, parent_id, study, interrupted=True)
                except Exception as error:  # best effort while unwinding
                    log.warning("could not close the study's MLflow parent run: %s", error)
            raise
        summary = summarize(study)
        try:
            for note in write_study_files(study, summary, sweep_dir):
                log.info(note)
        except OSError as error:  # the trials are recorded; only the summary files are missing
            log.warning("could not write the study's files: %s", error)
        if client is not None:
            with lock():  # workers ending together write the one parent in turn (MLflow tag writes race)
                try:
                    log_study(client, parent_id, study, summary, storage)
                except Exception as error:  # the trials are recorded; only the parent's summary is missing
                    log.warning("could not log the study's result to its MLflow parent run: %s", error)
            try:  # the results table: printed, results.csv in the sweep folder and on the parent run
                from dabench.report.results import record_sweep_results

                print(record_sweep_results(client, parent_id, sweep_dir, f"study {name} results"), flush=True)
            except Exception as error:  # the trials are recorded; only the table is missing
                log.warning("could not write the study's results table: %s", error)
            close_parent(client, parent_id, study)
        print(format_summary(summary), flush=True)
        redact_hydra_output(sweep_dir)
        return summary.to_dict()
