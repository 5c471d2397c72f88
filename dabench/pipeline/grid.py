"""Predict-mode grids in one process: ``python -m dabench grid [overrides with comma lists]``.

The same sweep as ``python -m dabench [overrides] -m`` (Hydra's basic-sweeper grammar), run in this
process: each predicted configuration is its own MLflow run, recorded in batches through
:class:`dabench.tracking.lifecycle.BatchRecorder` without per-run artifact files, all children of
one parent run unless ``tracking.parent_run_id`` or ``$DABENCH_PARENT_RUN_ID`` gives one. A
configuration that would measure, or asks for its plot, goes through
:func:`dabench.pipeline.record.record_run` one at a time. For callers: :func:`expand`, :func:`run_grid`.

Details: docs/architecture.md, "Sweeps: Hydra multiruns and the in-process grid".
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from dabench.config.compose import Composer, sweeper_params
from dabench.core.result import RunResult
from dabench.core.status import DabenchError, Status, mlflow_state
from dabench.pipeline.execute import resolve_mode
from dabench.pipeline.job import Job, execute_job, prepare
from dabench.pipeline.record import record_run, run_record
from dabench.report.artifacts import wants_plot
from dabench.runtime.hydra_compat import BasicSweeper
from dabench.tracking.describe import reproduce_command, run_note, summary_line
from dabench.tracking.lifecycle import PARENT_ENV, BatchRecorder, ParentRun
from dabench.tracking.naming import run_name
from dabench.tracking.outbox import PREFIX, is_unreachable
from dabench.tracking.redact import redact_pair

#: a batch of this many finished runs is written at once
FLUSH_EVERY = 100


def expand(overrides: Sequence[str]) -> list[list[str]]:
    """The job override lists ``python -m dabench [overrides] -m`` launches, in its order:
    ``hydra.sweeper.params`` of the config composed from the non-sweep overrides, then
    ``overrides`` (a later value of a key replaces an earlier one), expanded as Hydra's basic
    sweeper does (:meth:`BasicSweeper.split_arguments`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
    params = sweeper_params(fixed)
    arguments = [f"{k}={v}" for k, v in params.items()] + list(overrides)
    return BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(arguments), None)[0]


@dataclass
class GridRun:
    """One configuration of a grid: its overrides, result and MLflow run id (None: not recorded)."""

    overrides: list[str]
    result: RunResult
    run_id: str | None = None


def _batched(job: Job) -> bool:
    """True when the job predicts (or is refused) and wants no per-run plot: recorded in batches."""
    if job.rc is None:
        return True
    try:
        mode, _ = resolve_mode(job.rc, warn=False)  # the run itself says "PREDICTED, not measured"
    except DabenchError:
        return True  # refused before any work: a result with no artifacts to keep
    return mode == "predict" and not wants_plot(job.container, mode)


@dataclass
class _Writer:
    """One BatchRecorder per (experiment, uri, parent) with the runs it records, ``assigned`` of
    them with their run ids."""

    recorder: Any
    waiting: list[GridRun] = field(default_factory=list)
    assigned: int = 0


def run_grid(
    jobs: Sequence[Sequence[str]],
    *,
    parent_run_id: str | None = None,
    parent_name: str | None = None,
    flush_every: int = FLUSH_EVERY,
    on_run: Callable[[GridRun], None] | None = None,
    composer: Composer | None = None,
) -> list[GridRun]:
    """Run every job (a list of overrides) in this process, each its own MLflow run; one
    :class:`GridRun` per job, in order. ``parent_run_id``: the runs' parent (else
    ``$DABENCH_PARENT_RUN_ID``, else one opened here, named ``parent_name``, closed with ``jobs.*``
    counts). ``on_run``: called with each finished run (``run_id`` set once its batch is written).
    Never raises for a failed configuration; bad overrides become unrecorded ``invalid_config``."""
    composer = composer or Composer()
    parent_id = parent_run_id or os.environ.get(PARENT_ENV) or None
    own_parent = None
    writers: dict[tuple, _Writer] = {}
    runs: list[GridRun] = []

    def writer_for(tracking: dict[str, Any]) -> _Writer:
        nonlocal own_parent, parent_id
        parent = tracking.get("parent_run_id") or parent_id
        experiment = tracking.get("experiment") or "dabench"
        if parent is None:  # one parent for the grid, opened before its first run
            own_parent = ParentRun.start(
                "grid",
                experiment=experiment,
                uri=tracking.get("uri"),
                run_name=parent_name or "grid",
                note=f"Grid: {parent_name or 'python -m dabench grid'}",
            )
            parent = parent_id = own_parent.run_id
        key = (experiment, tracking.get("uri"), parent)
        if key not in writers:
            writers[key] = _Writer(
                BatchRecorder(experiment=experiment, uri=tracking.get("uri"), parent_id=parent, flush_every=flush_every)
            )
        return writers[key]

    def collect(w: _Writer) -> None:
        for run, run_id in zip(w.waiting[w.assigned :], w.recorder.run_ids[w.assigned :], strict=False):
            run.run_id = run_id
            w.assigned += 1
            if on_run is not None:
                on_run(run)

    def finished(run: GridRun) -> None:
        runs.append(run)
        if on_run is not None:
            on_run(run)

    try:
        for job in jobs:
            job = list(job)
            try:
                composed = composer.compose(job)
            except Exception as error:  # an unknown group option or key: bad input, a result
                finished(GridRun(job, RunResult(Status.INVALID_CONFIG, f"invalid overrides {job}: {error}", "none")))
                continue
            prepared = prepare(composed)
            tracking = prepared.container.get("tracking") or {}
            if not tracking.get("enabled", True):
                finished(GridRun(job, execute_job(prepared), None))
                continue
            name = prepared.name
            note = lambda r, name=name, job=job: run_note(summary_line(r, name), reproduce_command(job))
            if not _batched(prepared):  # measured or plotted: the one-at-a-time path, artifacts and all
                if not tracking.get("parent_run_id"):
                    if not parent_id:
                        writer_for(tracking)  # opens the grid's parent
                    prepared = replace(
                        prepared, container={**prepared.container, "tracking": {**tracking, "parent_run_id": parent_id}}
                    )
                with tempfile.TemporaryDirectory(prefix="dabench-grid-") as tmp:
                    result, run_id = record_run(prepared, artifacts_dir=Path(tmp) / "artifacts", name=name, note=note)
                finished(GridRun(job, result, run_id))
                continue
            w = writer_for(tracking)
            runs.append(GridRun(job, RunResult(Status.CRASHED, "not run", "none")))
            w.waiting.append(runs[-1])
            with w.recorder.run(name) as pending:  # start time taken here, end time at exit
                result = execute_job(prepared)
                record = run_record(result, prepared.container, note(result))
                pending.params, pending.metrics, pending.tags = record.params, record.metrics, record.tags
                pending.set_status(result.status, result.reason)
                runs[-1].result = result
            collect(w)
    finally:
        for w in writers.values():
            w.recorder.flush()
            collect(w)
        if own_parent is not None:  # ended with its recorded children's counts, as a -m multirun's
            recorded = [r for r in runs if r.run_id is not None]
            interrupted = sys.exc_info()[0] is not None and len(recorded) < len(jobs)  # stopped short
            outcomes = [(r.result.status.value, r.result.metrics.get("throughput.samples_per_s")) for r in recorded]
            own_parent.finish(Status.INTERRUPTED if interrupted else Status.OK, outcomes=outcomes)
    return runs


def _run_like(run: GridRun) -> Any:
    """``run`` shaped as an MLflow run (info, data) from its in-memory record, redacted as the
    store would hold it: for a table of runs that wait in the outbox."""
    from types import SimpleNamespace

    container = run.result.config or {}
    record = run_record(run.result, container)
    name = (container.get("tracking") or {}).get("run_name") or (run_name(container) if container else "")
    tags = {k: redact_pair(k, v) for k, v in {**record.tags, "mlflow.runName": name}.items()}
    info = SimpleNamespace(
        run_id=run.run_id or "",
        experiment_id=(container.get("tracking") or {}).get("experiment") or "dabench",
        run_name=name,
        status=mlflow_state(run.result.status),
        start_time=None,
        end_time=None,
    )
    params = {k: redact_pair(k, v) for k, v in record.params.items()}
    return SimpleNamespace(info=info, data=SimpleNamespace(tags=tags, params=params, metrics=record.metrics))


def write_results(runs: Sequence[GridRun], folder: Path, uri: str | None, title: str = "grid results") -> str:
    """The grid's results table, and ``folder/results.csv``: read back from the store (and
    logged on the grid's parent run) when every run is there; otherwise (the runs wait in the
    outbox, or ``tracking.enabled=false``) built from the runs in memory, results.csv still
    written here. Returns the text to print."""
    from dabench.report.frame import runs_to_frame
    from dabench.report.results import record_grid_results, render_results, write_results_csv

    recorded = [r.run_id for r in runs if r.run_id]
    if recorded and not any(i.startswith(PREFIX) for i in recorded):
        try:
            return record_grid_results(uri, recorded, folder, title)
        except Exception as error:
            if not is_unreachable(error):
                raise
    where = "the runs wait in the outbox: dabench sync" if recorded else "not recorded: tracking.enabled=false"
    frame = runs_to_frame([_run_like(r) for r in runs if r.run_id or not recorded])
    path = write_results_csv(frame, folder / "results.csv")
    return render_results(frame, title) + f"\nresults.csv: {path} ({where})"


def summary(run: GridRun) -> str:
    """The one-line summary a run prints (tracking/describe.py), with its run name."""
    return summary_line(run.result, run_name(run.result.config) if run.result.config else " ".join(run.overrides))
