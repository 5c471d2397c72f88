"""NVIDIA and AMD GPUs (``hardware.arch=cuda``; presets cuda = H200, cuda_a100, cuda_h100, b200,
mi300x, mi325x: generations of the family): the shared roofline device model (perfmodel/device.py), measured with torch
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
    # generations by name, each with its board's power (their band: the generation knob)
    presets={
        "cuda_h100": PowerFigure(
            700.0,
            "tdp",
            "one H100 SXM5 GPU board; no host, NVSwitch or cooling",
            "NVIDIA H100 Tensor Core GPU datasheet (2023)",
            "specifications table, H100 SXM column, 'Max thermal design power (TDP): up to 700W (configurable)'",
        ),
        "cuda_a100": PowerFigure(
            400.0,
            "tdp",
            "one A100 SXM4 80GB GPU board; no host, NVSwitch or cooling",
            "NVIDIA A100 Tensor Core GPU datasheet (2021)",
            "specifications table, A100 80GB SXM column, 'Max Thermal Design Power (TDP): 400W'",
        ),
        "b200": PowerFigure(
            1000.0,
            "max",
            "one B200 GPU of an HGX B200 board, at its 1,000 W configuration; no host, NVSwitch or cooling",
            "G. Lockwood, 'B200' (glennklockwood.com/garden/processors/B200), quoting NVIDIA's Blackwell datasheet",
            "list of per-GPU figures, '1000 W maximum'; table 'HGX variant of B200 ... configured at 1,000 W'",
        ),
        "mi300x": PowerFigure(
            750.0,
            "tdp",
            "one MI300X OAM module; no host, Infinity Fabric switch or cooling",
            "Tom's Hardware, 'AMD MI300X Guzzles Power, Rated for 750 Watts' (June 2023), citing AMD's launch footnote",
            "first paragraph: 'at 750 W, it's actually the product with the highest-rated TDP ever in its form-factor'",
        ),
        "mi325x": PowerFigure(
            1000.0,
            "tdp",
            "one MI325X OAM module; no host, Infinity Fabric switch or cooling",
            "Yobitel knowledge base, 'AMD MI325X' (yobitel.com/knowledge-base/amd-mi325x)",
            "table 'Specifications vs MI300X', row TDP: '~1,000 W' (MI300X: 750 W)",
        ),
    },
    # estimates, not fitted to points.csv: the bounds a fit from runs may move them in
    fit_bounds={"compute_efficiency": (0.05, 1.0), "memory_efficiency": (0.05, 1.0), "launch_s": (1e-7, 1e-4)},
)
