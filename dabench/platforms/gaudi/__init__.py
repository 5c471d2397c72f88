"""Intel Gaudi 2 and Gaudi 3 (``hardware.arch=gaudi2``; preset gaudi3 a generation of the family with its
own power figure): the shared roofline device model (perfmodel/device.py) with GEMMs on the
matrix engines (MME, ``peak_flops``), every other op on the tensor processor cores (TPC,
``options.vector_flops``), HBM, and the on-chip RoCE ports (all-to-all inside an 8-chip node, three
per chip to the scale-out network); measured through Intel's PyTorch bridge (backend.py); knobs in
knobs.py. Advise searches the GPU family's layouts (space.py over platforms/gpu/space.py): the same data x
tensor x pipeline parallelism over 8-chip nodes."""

from __future__ import annotations

from dabench.core.platforms import Platform, PowerFigure, deferred, imported

#: the Hot Chips 2024 talk whose 'Gaudi Product Generations' table gives both TDPs
HOT_CHIPS = (
    "R. Kaplan (Intel), 'Intel Gaudi 3 AI Accelerator: Architected for Gen AI Training and Inference', Hot Chips 2024"
)


PLATFORM = Platform(
    "gaudi2",
    deferred("dabench.perfmodel.device", "predict"),
    {"hpu": imported("dabench.platforms.gaudi.backend", "HpuBackend")},
    imported("dabench.platforms.gaudi.knobs", "GaudiKnobs"),
    space=deferred("dabench.platforms.gaudi.space", "advise_space"),
    power=PowerFigure(
        600.0,
        "tdp",
        "one Gaudi 2 OAM module (HL-225H); no host, switches or cooling",
        HOT_CHIPS,
        "slide 'Gaudi Product Generations', row 'TDP (OAM)', Gaudi 2 column: 600W",
    ),
    presets={
        "gaudi3": PowerFigure(
            900.0,
            "tdp",
            "one air-cooled Gaudi 3 OAM module (HL-325L); no host, switches or cooling",
            HOT_CHIPS,
            "slide 'Gaudi Product Generations', row 'TDP (OAM)', Gaudi 3 column: 900W (Air) / 1200W (Liquid)",
        )
    },
    # estimates, not fitted to points.csv: the bounds a fit from runs may move them in
    fit_bounds={"compute_efficiency": (0.05, 1.0), "memory_efficiency": (0.05, 1.0), "launch_s": (1e-7, 1e-4)},
)
