"""``python -m dabench ingest PATH [--log]``: parse existing vendor artifacts.

Detects what PATH is (a Cerebras compile report, a cstorch appliance run folder, a SambaFlow
compile folder, a SambaTune section_report.csv, a dabench PopVision JSON export), prints one JSON
object (source, units, subtasks, bottleneck, metrics under their MLflow names) and, with
``--log``, records it as an MLflow run tagged ``dabench.mode=measure`` with the source files as
artifacts.

Exit status: 0 the artifact parsed complete (and, with --log, was recorded ok); 1 with --log,
the run was recorded with a status other than ok (a truncated or inconsistent artifact:
incomplete_artifact), or could not be recorded (disk_full when the disk under the store is full,
tracking_error when the store failed): one line on stderr says which; 2 PATH is not a known
artifact.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import REQUIRED, TEXT
from dabench.core.status import ConfigError, Status
from dabench.ingest.artifact import ArtifactReport
from dabench.ingest.config import run_fields
from dabench.ingest.parse import parse
from dabench.tracking.lifecycle import recorded_run, write_error_status
from dabench.tracking.naming import MAX_EXPERIMENT_CHARS, MAX_RUN_NAME_CHARS
from dabench.tracking.redact import redact_text


def log_report(report: ArtifactReport, path: Path, experiment: str, uri: str | None, run_name: str | None) -> str:
    """Record ``report`` as one MLflow run (see module doc); returns the run id."""
    config_params, config_tags = run_fields(report.source, report.stated)  # docs/fitting.md, "Ingested runs"
    tags = {
        "dabench.mode": "measure",
        "dabench.source": report.source,
        "dabench.imported_from": str(path.resolve()),
        "dabench.profile.subtask_kind": report.subtask_kind,
        **report.info,
        **{
            f"dabench.{key}": getattr(report, key)
            for key in ("throughput_basis", "bottleneck", "load_imbalance_basis")
            if getattr(report, key)
        },
        **config_tags,
    }
    name = run_name or f"import {report.source} {path.name}"
    with (
        recorded_run(experiment=experiment, uri=uri, run_name=name, tags=tags) as run,
        tempfile.TemporaryDirectory() as tmp,
    ):
        folder = Path(tmp)
        (folder / "profile.json").write_text(json.dumps(report.to_dict(), indent=1))
        sources, base = folder / "vendor", (path if path.is_dir() else path.parent).resolve()
        # each file was checked when parsed; one swapped since (no longer a plain file) is skipped
        for file in (f for f in report.files if Path(f).is_file() and not Path(f).is_symlink()):
            source = Path(file).resolve()
            target = sources / (source.relative_to(base) if source.is_relative_to(base) else source.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        run.log(
            params={**config_params, "import.path": str(path.resolve()), "import.format": report.source},
            metrics=report.metrics(),
        )
        run.log_artifacts(folder)
        # a truncated or inconsistent artifact is recorded as such, never ok (tag written at close)
        run.set_status(Status(report.status), report.reason)
    return run.run_id


@command(
    "ingest",
    __doc__.split("\n\n")[1],
    {
        "path": arg(TEXT, "an artifact file or folder", REQUIRED),
        "--log": flag("record the result as an MLflow run"),
        "--experiment": arg(TEXT, "MLflow experiment", "dabench", max_len=MAX_EXPERIMENT_CHARS),
        "--tracking-uri": arg(
            TEXT, "MLflow URI (default: $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlruns/mlflow.db)"
        ),
        "--run-name": arg(TEXT, "the MLflow run's name", max_len=MAX_RUN_NAME_CHARS),
    },
    writes={"store": lambda args: args.log, "artifacts": lambda args: args.log},
    epilog=__doc__.split("\n\n")[2],
)
def main(args) -> int:
    path = Path(args.path)
    try:
        report = parse(path)
    except ValueError as error:
        raise ConfigError("", None, str(error)) from None
    document = report.to_dict()
    for entry in report.skipped:
        print(f"dabench ingest: skipped {entry}", file=sys.stderr)
    for problem in report.problems:
        print(f"dabench ingest: incomplete artifact: {problem}", file=sys.stderr)
    code = 0
    if args.log:
        try:  # a failure to record is one line on stderr, not a traceback
            document["mlflow_run_id"] = log_report(report, path, args.experiment, args.tracking_uri, args.run_name)
        except Exception as error:
            status = write_error_status(error).value
            why = f"{status}: the run could not be recorded: {type(error).__name__}: {error}"
            print(redact_text(f"dabench ingest: {why}"), file=sys.stderr)
            return 1
        if report.status != Status.OK.value:
            print(f"dabench ingest: recorded run {document['mlflow_run_id']} as {report.status}", file=sys.stderr)
            code = 1
    print(json.dumps(document, indent=1))
    return code
