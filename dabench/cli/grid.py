"""``dabench grid [--quiet] [overrides with comma lists]``: a predict grid in one process, every
configuration its own MLflow run under one parent (dabench/pipeline/grid.py), then its results
table."""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from pathlib import Path

from dabench.cli.frame import MAX_TEXT, arg, command, flag
from dabench.config.compose import compose
from dabench.config.fields import LIST, TEXT
from dabench.core.status import ConfigError, is_ok
from dabench.pipeline.grid import GridRun, expand, run_grid, summary, write_results
from dabench.pipeline.job import prepare
from dabench.pipeline.preflight import UNREACHABLE, check_sink, environment_problems, format_problems
from dabench.runtime.progress import SweepProgress
from dabench.runtime.sinks import one_line
from dabench.tracking.naming import StoreLimitError


def _preflight(jobs: list[list[str]], folder: Path) -> str | None:
    """Before any work: the first job's names, keys and values (every job shares the user's
    tracking settings), the store, run folder and results.csv of the grid; one line per problem."""
    try:
        job = prepare(compose(jobs[0]))
    except Exception:  # no job, or an unknown option: each such job is recorded invalid_config by the grid
        return None
    if isinstance(job.error, StoreLimitError):  # the store would refuse every run's record
        return f"dabench grid: {job.error}"
    problems = check_sink("results_csv", folder / "results.csv", "results.csv")
    if job.rc is not None:
        problems += [p for p in environment_problems(job.rc) if p.kind != UNREACHABLE]  # a sweep: the outbox
    return format_problems(problems) if problems else None


@command(
    "grid",
    __doc__,
    {
        "--quiet": flag("no line per configuration (progress and the results table only)"),
        "overrides": arg(
            LIST,
            "group=option or key=value overrides; comma lists (key=v1,v2) span the grid, as with -m",
            (),
            item=arg(TEXT, "an override", max_len=4 * MAX_TEXT),  # each field bounds its value
        ),
    },
    overrides="*",
    writes={"results_csv": True, "run_dir": True, "store": True, "artifacts": True, "outbox": True},
)
def main(parsed) -> int:
    """Exit 0 when the grid ran (failed configurations are results), 2 for overrides that cannot be expanded."""
    quiet, args = parsed.quiet, list(parsed.overrides)
    logging.basicConfig(level=logging.WARNING, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    try:
        jobs = expand(args)
    except Exception as error:
        raise ConfigError("", None, str(error)) from None
    folder = (Path("multirun") / time.strftime("%Y-%m-%d") / time.strftime("%H-%M-%S-grid")).resolve()
    refused = _preflight(jobs, folder)
    if refused:
        print(refused, file=sys.stderr)
        return 2
    start = time.perf_counter()
    progress = SweepProgress(len(jobs), "grid", "runs")  # done/total, ok/failed, ETA on stderr

    def on_run(r: GridRun) -> None:
        progress.clear()
        if not quiet:
            print(summary(r), flush=True)
        progress.finished(is_ok(r.result.status))

    runs = run_grid(jobs, parent_name="grid " + " ".join(args), on_run=on_run)
    progress.close()
    elapsed = time.perf_counter() - start
    print(
        f"dabench grid: {len(runs)} runs in {elapsed:.1f} s ({len(runs) / elapsed:.1f} runs/s) "
        f"{dict(Counter(r.result.status.value for r in runs))}",
        flush=True,
    )
    try:  # the results table, results.csv under multirun/<date>/<time>-grid and on the grid's parent run
        uri = ((runs[0].result.config or {}).get("tracking") or {}).get("uri") if runs else None
        print(write_results(runs, folder, uri), flush=True)
    except Exception as error:  # the runs are recorded; only the table is missing
        print(f"dabench grid: could not write the results table: {one_line(error)}", file=sys.stderr)
        return 1
    return 0
