"""SambaNova SN30 RDU (``hardware=rdu``) and its generation preset SN40L (``hardware=sn40l``, three
memory tiers): section/stage model (model.py, host.py), SambaFlow runner (runner.py,
backend.py), compile-folder and SambaTune parser (ingest.py), deployment space (space.py), knobs
(knobs.py)."""

from __future__ import annotations

from dabench.core.platforms import Platform, PowerFigure, deferred, imported

PLATFORM = Platform(
    "rdu",
    deferred("dabench.platforms.rdu.model", "predict"),
    {"sambaflow": imported("dabench.platforms.rdu.backend", "SambaflowBackend")},
    imported("dabench.platforms.rdu.knobs", "RduOptions"),
    ingest=imported("dabench.platforms.rdu.ingest"),
    formats=("sambaflow_compile", "sambatune_section_report"),
    sweep="rdu_deploy",
    tiles_per_chip=8,
    space=deferred("dabench.platforms.rdu.space", "advise_space"),
    # no public power figure found (SambaNova's site-preparation pages say power is discussed per
    # site with a representative)
    power=PowerFigure(None, "unsourced", "no public SN30 / DataScale SN30-8 power figure found"),
    # SambaNova's SN40L documents (Hot Chips 2024, arXiv 2405.07518, the SambaRack SN40L-16 hardware
    # reference) give no power; the site-preparation page leaves it to a representative
    presets={"sn40l": PowerFigure(None, "unsourced", "no public SN40L / SambaRack SN40L-16 power figure found")},
)
