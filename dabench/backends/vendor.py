"""The orchestrator side of a vendor backend: SDK availability, the isolated runner call, and
the runner's result plus the vendor's artifacts turned into a measured Profile. Knobs
 read from ``hardware.options`` (only ``runner_*`` keys belong to this layer):
``runner_timeout_s`` (default :attr:`VendorBackend.default_timeout_s`), ``runner_workdir``
(default ``<cwd>/vendor_runs/<backend>-<time>-<pid>``; Hydra's cwd is the job folder).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from dabench.backends.base import Availability, Backend, TimedWindowCallback
from dabench.config.sections import RunConfig
from dabench.core.paths import launch_dir
from dabench.core.profile import Profile, Subtask, UnitUse
from dabench.core.status import IncompleteArtifact
from dabench.ingest.parse import parse
from dabench.runtime.isolation import child_env, run_child
from dabench.workload.opgraph import OpGraph

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 120.0


def resolve_interpreter(python: str | None) -> str | None:
    """``hardware.python`` as an absolute path: a bare name (``python3.8``) is looked up on PATH, a
    relative path (``.venv-cerebras/bin/python``) is taken from the launch directory (Hydra changes
    the working directory per job)."""
    if not python:
        return None
    if os.sep not in python:
        return shutil.which(python) or python
    path = Path(python).expanduser()
    if not path.is_absolute():
        path = launch_dir() / path
    return str(path)


@functools.lru_cache(maxsize=64)
def probe_sdk(python: str | None, module: str, ipus: int = 0, pythonpath: str = "") -> tuple[bool, str, str]:
    """(ok, reason, version) from ``python -m dabench.vendors.probe`` (cached per interpreter,
    module and PYTHONPATH). Runs as a child so the orchestrator never imports the SDK or torch."""
    interpreter = python or sys.executable
    if python and not Path(python).exists():
        return False, f"hardware.python={python} does not exist", ""
    command = [interpreter, "-m", "dabench.vendors.probe", module] + (["--ipus", str(ipus)] if ipus else [])
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=child_env(python))
        answer = json.loads(out.stdout.strip().splitlines()[-1])
        return bool(answer["ok"]), str(answer.get("reason", "")), str(answer.get("version", ""))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError) as error:
        return False, f"could not probe {interpreter} for {module} ({type(error).__name__}: {error})", ""


class VendorBackend(Backend):
    """A backend whose execution side runs through :func:`run_child` in the SDK's interpreter."""

    sdk_module: ClassVar[str]  #: the importable SDK module, e.g. "poptorch"
    sdk_label: ClassVar[str]  #: how people call it, e.g. "PopTorch (Poplar SDK)"
    install_hint: ClassVar[str]  #: how to get it
    runner_module: ClassVar[str]  #: e.g. "dabench.platforms.ipu.runner"
    default_timeout_s: ClassVar[float] = 4 * 3600.0  #: vendor compiles of large models take hours

    @classmethod
    def interpreter(cls, rc: RunConfig) -> str | None:
        """The interpreter the runner uses: ``hardware.python`` (None = this one)."""
        return resolve_interpreter(rc.hardware.python)

    @classmethod
    def probe_ipus(cls, rc: RunConfig) -> int:
        return 0

    @classmethod
    def availability(cls, rc: RunConfig) -> Availability:
        python = cls.interpreter(rc)
        ok, reason, version = probe_sdk(python, cls.sdk_module, cls.probe_ipus(rc), os.environ.get("PYTHONPATH", ""))
        if ok:
            return cls.device_availability(rc)
        where = python or sys.executable
        if "not importable" in reason:
            return Availability(
                False,
                f"{cls.sdk_label} is not importable in {where} (module {cls.sdk_module}); "
                f"{cls.install_hint}, then set hardware.python=/path/to/that/venv/bin/python",
            )
        return Availability(False, f"{cls.sdk_label} in {where}: {reason}")

    @classmethod
    def device_availability(cls, rc: RunConfig) -> Availability:
        """Beyond the SDK: is there a device (or cluster) to run on? Default: yes."""
        return Availability(True)

    def check(self, rc: RunConfig) -> None:
        """Refuse what this vendor cannot run (UnsupportedError / ConfigError) before starting."""

    def workdir(self, rc: RunConfig) -> Path:
        configured = rc.hardware.options.get("runner_workdir")
        if configured:
            return Path(configured)
        return Path.cwd() / "vendor_runs" / f"{self.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"

    def call(self, rc: RunConfig, workdir: Path, phase: str = "run", **extra: Any) -> dict[str, Any]:
        """One runner invocation (raises the DabenchError of a failed one)."""
        timeout = float(rc.hardware.options.get("runner_timeout_s") or self.default_timeout_s)
        request = {"phase": phase, "backend": self.name, "run_config": rc.to_dict(), **extra}
        log.info("%s: starting %s (phase %s) in %s", self.name, self.runner_module, phase, workdir)
        return run_child(self.runner_module, request, workdir, python=self.interpreter(rc), timeout_s=timeout)

    def run(self, rc: RunConfig, graph: OpGraph, on_timed_window: TimedWindowCallback | None = None) -> Profile:
        """The runner's timed window is in its own process: ``on_timed_window`` is never called."""
        self.check(rc)
        workdir = self.workdir(rc)
        return self.to_profile(rc, self.call(rc, workdir), workdir)

    def to_profile(self, rc: RunConfig, result: dict[str, Any], workdir: Path) -> Profile:
        """Profile from the runner result, enriched by the parsed vendor artifacts it names
        (``result["artifact_paths"]``: files or folders :func:`dabench.ingest.parse.parse` reads)."""
        units = {k: UnitUse(*v) for k, v in (result.get("units") or {}).items()}
        subtasks = [
            Subtask(s["name"], time_s=s.get("time_s"), rate=s.get("rate"), units=s.get("units") or {})
            for s in result.get("subtasks") or []
        ]
        extra = {k: float(v) for k, v in (result.get("extra_metrics") or {}).items()}
        if "compile_time_s" in result:
            extra["compile.time_s"] = float(result["compile_time_s"])
        tags = {
            "runner_python": str(result.get("python")),
            **{k: str(v) for k, v in (result.get("info") or {}).items()},
        }
        if result.get("subtask_kind"):
            tags["subtask_kind"] = result["subtask_kind"]
        artifacts = [str(workdir / "request.json"), str(workdir / "result.json"), result.get("runner_log", "")]
        memory: dict[str, float] = {}
        bottleneck = None
        for path in result.get("artifact_paths") or []:
            try:
                report = parse(path)
            except ValueError as error:  # parse() turns every failure to read an artifact into one
                log.warning("could not parse vendor artifact %s: %s", path, error)
                continue
            if report.problems:  # a truncated or inconsistent vendor artifact is never ok
                raise IncompleteArtifact(f"{report.source} artifact {path}: {report.reason}")
            artifacts.extend(report.files)
            units.update(report.units)
            memory.update(report.memory_bytes)
            bottleneck = report.bottleneck or bottleneck
            converted = report.to_profile(samples_per_step=1, step_times_s=[1.0])  # its extra and LI
            extra.update({k: v for k, v in converted.extra_metrics.items() if k not in extra})
            if report.subtasks:
                subtasks = converted.subtasks
                tags["subtask_kind"] = report.subtask_kind
            tags[f"artifact.{report.source}"] = str(path)
        return Profile(
            mode="measure",
            source=self.name,
            step_times_s=[float(t) for t in result["step_times_s"]],
            samples_per_step=int(result["samples_per_step"]),
            tokens_per_step=int(result["samples_per_step"]) * rc.model.seq_len,
            chips=int(result.get("chips", 1)),
            units=units,
            subtasks=subtasks,
            memory_bytes=memory,
            bottleneck=bottleneck,
            extra_metrics=extra,
            tags=tags,
            artifacts=[a for a in artifacts if a],
        )
