"""SambaNova RDU through SambaFlow, run in the SambaFlow interpreter (``hardware.python``).
Execution side: :mod:`dabench.platforms.rdu.runner`, called for compile, then run; units, stages and
the bottleneck come from the parsed compile folder (docs/vendors.md, "SambaNova").
"""

from __future__ import annotations

from dabench.backends.base import TimedWindowCallback
from dabench.backends.vendor import VendorBackend
from dabench.config.sections import RunConfig
from dabench.core.profile import Profile
from dabench.core.status import UnsupportedError
from dabench.workload.opgraph import OpGraph


class SambaflowBackend(VendorBackend):
    name = "sambaflow"
    sdk_module = "sambaflow"
    sdk_label = "SambaFlow (SambaNova)"
    install_hint = (
        "run on a SambaNova host where SambaFlow is installed (/opt/sambaflow; not on PyPI) and use its Python venv"
    )
    runner_module = "dabench.platforms.rdu.runner"

    def check(self, rc: RunConfig) -> None:
        if rc.precision.name == "fp16":
            raise UnsupportedError("SambaFlow trains in bf16, fp32 or mixed; fp16 is not an RDU training mode")
        if rc.parallel.strategy in ("pp", "dp"):
            raise UnsupportedError(
                f"parallel={rc.parallel.strategy} is not driven on SambaFlow by dabench: the compiler "
                "pipelines sections itself, and data parallel needs an mpirun launch; use "
                "parallel=none or parallel=tp (--tensor-parallel with --n-chips)"
            )

    def run(self, rc: RunConfig, graph: OpGraph, on_timed_window: TimedWindowCallback | None = None) -> Profile:
        """The runner's timed window is in its own process: ``on_timed_window`` is never called."""
        self.check(rc)
        workdir = self.workdir(rc)
        compiled = self.call(rc, workdir / "compile", phase="compile")
        result = self.call(rc, workdir / "run", phase="run", pef=compiled["pef"])
        result.update(
            compile_time_s=compiled["compile_time_s"],
            chips=rc.parallel.degree if rc.parallel.strategy == "tp" else 1,
            subtask_kind="section_stage",
            artifact_paths=[compiled["compile_folder"]],
        )
        result.setdefault("info", {})["sambaflow.compile_argv"] = " ".join(compiled.get("argv", []))
        profile = self.to_profile(rc, result, workdir / "run")
        profile.artifacts[:0] = [str(workdir / "compile" / n) for n in ("request.json", "result.json", "runner.log")]
        return profile
