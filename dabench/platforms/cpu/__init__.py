"""This machine's CPU: the shared roofline device model (perfmodel/device.py) at its calibrated
ceilings, measured with torch (backend.py); knobs in knobs.py."""

from __future__ import annotations

from dabench.core.platforms import Platform, PowerFigure, deferred, imported
from dabench.host.info import cpu_model

PLATFORM = Platform(
    "cpu",
    deferred("dabench.perfmodel.device", "predict"),
    {"cpu": imported("dabench.platforms.cpu.backend", "CpuBackend")},
    imported("dabench.platforms.cpu.knobs", "CpuKnobs"),
    host_backends=("cpu",),
    host_cpu=True,
    device_name=cpu_model,
    sweep="cpu_deploy",
    # its TDP depends on the part; not looked up
    power=PowerFigure(None, "unsourced", "this machine's CPU: no TDP looked up"),
    # the fit from its own measurements (not fitted to points.csv); order = priority when points are
    # few. compute_efficiency is 1.0 by construction on a quiet machine (the calibrated peak is a
    # large matmul's rate); measured runs of a busy or different machine move it too
    fit_bounds={
        "launch_s": (1e-6, 1e-3),
        "memory_efficiency": (0.02, 1.0),
        "compute_efficiency": (0.02, 1.0),
        "emulated_compute_efficiency": (0.01, 1.0),
        "emulated_memory_efficiency": (0.01, 1.0),
        "matmul_half_flops": (0.0, 2e8),
    },
)
