"""The Python entry for a run: ``predict(overrides)`` and ``run(overrides)`` -> :class:`Result`.

    >>> from dabench import predict
    >>> r = predict(["hardware=ipu", "parallel=pp"])
    >>> r.status, r.metrics["throughput.samples_per_s"]

Overrides are ``python -m dabench``'s, composed against conf/ and run through the same pipeline
as the Hydra task. :func:`predict` forces ``hardware.mode=predict`` (no torch import); :func:`run`
honours ``hardware.mode`` and with ``record=True`` records the run in MLflow. Neither raises for
a failed run: the status says it (``invalid_config``, ``capacity``, ...).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

from dabench.config.build import build_run_config
from dabench.config.compose import compose
from dabench.config.sections import RunConfig
from dabench.core.result import RunResult
from dabench.core.status import Status
from dabench.ingest.parse import parse
from dabench.pipeline.job import execute_job, prepare
from dabench.pipeline.record import record_run
from dabench.tracking.describe import reproduce_command, run_note, summary_line

#: a run's typed result: status, reason, mode, metrics, the resolved config (``config``, and the
#: validated ``run_config``), diagnosis, profile / predicted profile, notes
Result = RunResult

__all__ = ["Result", "RunConfig", "build_run_config", "compose", "parse_artifact", "predict", "run"]


def predict(overrides: Sequence[str] = ()) -> RunResult:
    """Predict with the analytical model of the selected hardware (``hardware.mode=predict``)."""
    return run([*overrides, "hardware.mode=predict"])


def run(overrides: Sequence[str] = (), *, record: bool = False) -> RunResult:
    """Run as ``hardware.mode`` says (measure, validate, auto or predict); with ``record=True``
    the run is recorded in MLflow (``tracking.*`` settings apply) exactly as the Hydra task
    records it."""
    try:
        container = compose(list(overrides))
    except Exception as error:  # an unknown group option or key: bad input, a result
        return RunResult(Status.INVALID_CONFIG, f"invalid overrides {list(overrides)}: {error}", "none")
    if not record:
        return execute_job(prepare(container))

    job = prepare(container)
    command = reproduce_command(list(overrides))
    note = lambda r: run_note(summary_line(r, job.name), command)
    with tempfile.TemporaryDirectory(prefix="dabench-run-") as tmp:
        return record_run(job, artifacts_dir=Path(tmp) / "artifacts", note=note)[0]


def parse_artifact(path: str | Path):
    """A vendor artifact (compile report, run folder, SambaFlow compile folder, PopVision JSON) ->
    :class:`~dabench.ingest.artifact.ArtifactReport`; what ``dabench ingest PATH`` parses."""
    return parse(path)
