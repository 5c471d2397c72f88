"""Graphcore IPU through PopTorch, run in the Poplar SDK's interpreter (``hardware.python``).
Execution side: :mod:`dabench.platforms.ipu.runner`; what a step is: docs/vendors.md (backends table).
"""

from __future__ import annotations

from dabench.backends.vendor import VendorBackend
from dabench.config.sections import RunConfig
from dabench.core.status import ConfigError, UnsupportedError
from dabench.platforms.ipu.runner import ipu_counts


class PoptorchBackend(VendorBackend):
    name = "poptorch"
    sdk_module = "poptorch"
    sdk_label = "PopTorch (Graphcore Poplar SDK)"
    install_hint = (
        "install the Poplar SDK and its poptorch wheel (not on PyPI: "
        "pip install <poplar-sdk>/poptorch-*.whl into a venv, source the SDK's enable.sh)"
    )
    runner_module = "dabench.platforms.ipu.runner"

    @classmethod
    def probe_ipus(cls, rc: RunConfig) -> int:
        if rc.hardware.options.get("runner_ipu_model"):
            return 0
        per_replica, replicas = ipu_counts(rc.parallel.strategy, rc.parallel.degree, rc.parallel.replicas)
        return per_replica * replicas

    def check(self, rc: RunConfig) -> None:
        if rc.parallel.strategy not in ("none", "dp", "pp"):
            raise UnsupportedError(
                f"PopTorch has no tensor-parallel mode in dabench (parallel={rc.parallel.strategy}); use "
                "parallel=pp (pipeline over IPUs) or parallel=dp (replication)"
            )
        if rc.precision.name == "bf16":
            raise UnsupportedError("IPUs have no bf16 arithmetic; use precision=fp16, mixed or fp32")
        if rc.parallel.strategy == "pp":
            stages = 2 * rc.parallel.degree - 1
            if rc.run.grad_accum < stages:
                raise ConfigError(
                    "run.grad_accum",
                    rc.run.grad_accum,
                    f"must be at least the {stages} training pipeline stages of {rc.parallel.degree} IPUs "
                    "(2 x IPUs - 1)",
                )
