"""Graphcore Bow IPU: pipeline model (model.py), PopTorch runner and PopVision export (runner.py,
export.py, backend.py), PopVision parser (ingest.py), placement space (space.py), knobs
(knobs.py)."""

from __future__ import annotations

from dabench.core.platforms import Platform, PowerFigure, deferred, imported

PLATFORM = Platform(
    "ipu",
    deferred("dabench.platforms.ipu.model", "predict"),
    {"poptorch": imported("dabench.platforms.ipu.backend", "PoptorchBackend")},
    imported("dabench.platforms.ipu.knobs", "IpuOptions"),
    ingest=imported("dabench.platforms.ipu.ingest"),
    formats=("popvision_json",),
    pipeline_grad_accum=True,
    sweep="ipu_deploy",
    space=deferred("dabench.platforms.ipu.space", "advise_space"),
    # Bow-2000: 4 Bow IPUs in a 1U machine, 1.25 kW average (Graphcore's figure, reported by eeNews
    # Europe); 1,250 W / 4 = 312.5 W per IPU
    power=PowerFigure(
        1250.0 / 4,
        "average",
        "a quarter of one Bow-2000 machine (4 IPUs, streaming memory, gateway); no host server",
        "eeNews Europe, N. Flaherty, 'Graphcore details power for Bow AI unit' (2022), quoting Graphcore",
        "'The 1U unit integrated four of the new Bow processors ... with an average power of 1.25kW'",
    ),
)
