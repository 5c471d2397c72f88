"""Cerebras through cerebras.pytorch 2.x (weight streaming on CSX), run in a cerebras-pytorch
venv (``hardware.python``; default ``<repo>/.venv-cerebras/bin/python`` when it exists, as
scripts/setup_cerebras_venv.sh creates it).
``cstorch`` needs a Wafer-Scale Cluster; ``cstorch_cpu`` runs the same runner on cstorch's CPU
backend. Execution side: :mod:`dabench.platforms.wse.runner`. Profile: step = one global batch; the
executor's performance.json / track.json are parsed as an appliance run.
"""

from __future__ import annotations

import os
from pathlib import Path

from dabench.backends.base import Availability
from dabench.backends.vendor import VendorBackend, resolve_interpreter
from dabench.config.sections import RunConfig
from dabench.core.status import UnsupportedError
from dabench.runtime.isolation import REPO_ROOT

DEFAULT_VENV_PYTHON = REPO_ROOT / ".venv-cerebras" / "bin" / "python"
CSCONFIG_PATH = Path("/opt/cerebras/config_v2")  # the usernode installer's cluster config (cstorch 2.x)


class CstorchBackend(VendorBackend):
    name = "cstorch"
    sdk_module = "cerebras.pytorch"
    sdk_label = "cerebras.pytorch (cstorch 2.x)"
    install_hint = (
        "create its venv with scripts/setup_cerebras_venv.sh (pip install cerebras-pytorch==2.10.0, Python 3.11)"
    )
    runner_module = "dabench.platforms.wse.runner"

    @classmethod
    def interpreter(cls, rc: RunConfig) -> str | None:
        if rc.hardware.python:
            return resolve_interpreter(rc.hardware.python)
        return str(DEFAULT_VENV_PYTHON) if DEFAULT_VENV_PYTHON.exists() else None

    @classmethod
    def device_availability(cls, rc: RunConfig) -> Availability:
        configured = os.environ.get("CSCONFIG_PATH")
        if (
            rc.hardware.options.get("runner_mgmt_address")
            or (Path(configured) if configured else CSCONFIG_PATH).exists()
        ):
            return Availability(True)
        return Availability(
            False,
            f"cerebras.pytorch is installed but no Wafer-Scale Cluster is configured (no "
            f"{configured or CSCONFIG_PATH}; set hardware.options.runner_mgmt_address=<host:port> "
            "or CSCONFIG_PATH); hardware.backend=cstorch_cpu runs the same code on cstorch's CPU backend",
        )

    def check(self, rc: RunConfig) -> None:
        if rc.parallel.strategy not in ("none", "dp"):
            raise UnsupportedError(
                f"cstorch 2.x runs weight streaming only; parallel={rc.parallel.strategy} has no "
                "cstorch equivalent (use parallel=none, or parallel=dp for num_csx)"
            )


class CstorchCpuBackend(CstorchBackend):
    name = "cstorch_cpu"

    @classmethod
    def device_availability(cls, rc: RunConfig) -> Availability:
        return Availability(True)

    def check(self, rc: RunConfig) -> None:
        super().check(rc)
        if rc.parallel.strategy == "dp":
            raise UnsupportedError("cstorch's CPU backend runs on one device; parallel=dp needs CSX systems")
        if rc.precision.name == "fp16" or (rc.precision.autocast and rc.precision.compute_dtype == "fp16"):
            raise UnsupportedError(
                "cstorch's CPU backend supports mixed precision with bfloat16 only; use precision=bf16 or mixed"
            )
