"""Cerebras CS-2 (WSE-2, ``hardware.arch=wse2``) and its generation preset CS-3 (``hardware=wse3``):
layer-pipelined and weight-streaming model
(model.py, streaming.py), cerebras.pytorch runner (runner.py, backend.py), compile-report and
appliance-run parser (ingest.py), deployment space (space.py), knobs (knobs.py)."""

from __future__ import annotations

from dabench.core.platforms import Platform, PowerFigure, deferred, imported

PLATFORM = Platform(
    "wse2",
    deferred("dabench.platforms.wse.model", "predict"),
    {
        "cstorch": imported("dabench.platforms.wse.backend", "CstorchBackend"),
        "cstorch_cpu": imported("dabench.platforms.wse.backend", "CstorchCpuBackend"),
    },
    imported("dabench.platforms.wse.knobs", "Wse2Knobs"),
    host_backends=("cstorch_cpu",),
    ingest=imported("dabench.platforms.wse.ingest"),
    formats=("cerebras_compile_report", "cerebras_appliance_run"),
    mode_keys=("hardware.options.execution_mode",),
    sweep="wse2_deploy",
    space=deferred("dabench.platforms.wse.space", "advise_space"),
    # one WSE-2 per 15U CS-2; dabench counts one chip per CS-2 (chips_per_node: 1). Cerebras' figure
    # as reported by Golem.de; the CS-1 of the same form factor was 20 kW peak (AnandTech, 2020).
    power=PowerFigure(
        23000.0,
        "max",
        "one CS-2 system (wafer, power supplies, fans, pumps); no MemoryX, SwarmX or CPU cluster",
        "Golem.de, 'Cerebras WSE2: Dieser AI-Prozessor braucht ueber 20 Kilowatt' (April 2021), quoting Cerebras",
        "paragraph on the CS-2 15U systems: 'maximale Leistungsaufnahme eines solchen Systems bei 23 Kilowatt'",
    ),
    presets={  # one WSE-3 per CS-3; Cerebras at launch: twice the CS-2's performance at the same power
        "wse3": PowerFigure(
            23000.0,
            "max",
            "one CS-3 system, the CS-2's 23 kW (wafer, power supplies, fans, pumps); no MemoryX, SwarmX or CPU cluster",
            "Tom's Hardware, 'Cerebras launches 900,000-core 125 PetaFLOPS wafer-scale processor for AI' (March 2024)",
            "paragraph on power: 'Despite doubling its performance, the CS-3 maintains the same power consumption as "
            "its predecessor'; the CS-2's 23 kW: Golem.de (April 2021), as for wse2",
        )
    },
)
