"""A composed config becomes a job once: :func:`prepare` applies its pp placement and builds its
RunConfig (or keeps the ConfigError that refused it); :func:`execute_job` runs a job through the
pipeline (:func:`dabench.pipeline.execute.execute`), without MLflow. The Hydra task, the grid,
the in-process launcher and :mod:`dabench.api` all prepare here; nothing downstream applies the
placement again.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping

from dabench.config.build import apply_placement, build_run_config
from dabench.config.sections import RunConfig
from dabench.core.result import RunResult
from dabench.core.status import ConfigError, Status
from dabench.pipeline.execute import execute
from dabench.pipeline.preflight import job_problems, model_inputs_error
from dabench.tracking.naming import check_names, run_name


@dataclass(frozen=True)
class Job:
    """A prepared configuration: ``container``, the composed mapping with its placement applied
    (what runs is what is named and logged), and its ``rc``, or the ``error`` that refused it."""

    container: dict[str, Any]
    rc: RunConfig | None
    error: ConfigError | None = None

    @property
    def name(self) -> str:
        """``tracking.run_name``, else the name :func:`dabench.tracking.naming.run_name` gives."""
        return (self.container.get("tracking") or {}).get("run_name") or run_name(self.container)

    @cached_property
    def unfit(self) -> list:
        """What keeps this machine from running the job (pre-flight), checked once per job."""
        return job_problems(self.rc) if self.rc is not None else []


def prepare(container: Mapping[str, Any]) -> Job:
    """The placement applied and the RunConfig built from that same mapping; a bad placement is
    left for :func:`build_run_config` to refuse with its message."""
    try:
        placed = apply_placement(container)
    except ConfigError:
        placed = dict(container)
    try:
        rc = build_run_config(placed)
    except ConfigError as error:
        return Job(placed, None, error)
    refused = check_names(placed) or model_inputs_error(rc)  # options and constant set: before a run opens
    return Job(placed, None, refused) if refused is not None else Job(placed, rc)


def execute_job(job: Job) -> RunResult:
    """``job`` through the pipeline. A refused config becomes an ``invalid_config`` result (reason
    names field, value and what is valid), as does one this machine cannot run (pre-flight
    :func:`~dabench.pipeline.preflight.job_problems`); ``result.config`` is ``job.container``."""
    if job.rc is None:
        return RunResult(Status.INVALID_CONFIG, str(job.error), "none", config=job.container)
    if job.unfit:
        return RunResult(Status.INVALID_CONFIG, str(job.unfit[0]), "none", config=job.container)
    result = execute(job.rc)
    result.config = job.container
    return result
