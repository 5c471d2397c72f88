"""NVIDIA GPUs (``hardware.arch=cuda``; presets cuda = H200, cuda_a100, cuda_h100: generations of
the family): the shared roofline device model (perfmodel/device.py), measured with torch
(backend.py); knobs in knobs.py, advise's layouts in space.py."""

from __future__ import annotations

from dabench.core.platforms import Platform, PowerFigure, deferred, imported
from dabench.host.info import cuda_device_name

PLATFORM = Platform(
    "cuda",
    deferred("dabench.perfmodel.device", "predict"),
    {"cuda": imported("dabench.platforms.gpu.backend", "CudaBackend")},
    imported("dabench.platforms.gpu.knobs", "CudaKnobs"),
    tf32=True,
    generations=True,
    device_name=cuda_device_name,
    space=deferred("dabench.platforms.gpu.space", "advise_space"),
    # NVIDIA H200 SXM (the cuda preset). 700 W is the board's maximum TDP (configurable down); the
    # MLPerf Inference v4.1 system description of NVIDIA's own 8x H200 SXM submission states it as
    # "H200 TGP 700W".
    power=PowerFigure(
        700.0,
        "tdp",
        "one H200 SXM GPU board; no host, NVSwitch or cooling",
        "NVIDIA H200 Tensor Core GPU datasheet (2024), 'Max thermal design power (TDP): up to 700W "
        "(configurable)'; corroborated by mlcommons/inference_results_v4.1",
        "closed/NVIDIA/systems/H200-SXM-141GBx8_TRT_MaxQ.json, field hw_notes 'H200 TGP 700W'",
    ),
    # estimates, not fitted to points.csv: the bounds a fit from runs may move them in
    fit_bounds={"compute_efficiency": (0.05, 1.0), "memory_efficiency": (0.05, 1.0), "launch_s": (1e-7, 1e-4)},
)
