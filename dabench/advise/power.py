"""Power figures for the energy ESTIMATE of ``dabench advise``, one per platform, each with its
document and locator; ``None`` where no figure is sourced (energy then says "unsourced", never a
guess). Why here and what each kind means: docs/advise.md, "Energy and cost".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PowerFigure:
    watts_per_chip: float | None  #: watts per chip as dabench counts chips (metric ``chips``)
    kind: str  #: tdp | max | average | unsourced
    covers: str  #: what the figure includes
    document: str  #: where it is printed
    locator: str  #: where in the document

    @property
    def sourced(self) -> bool:
        return self.watts_per_chip is not None

    def label(self) -> str:
        if not self.sourced:
            return f"unsourced ({self.covers})"
        return f"{self.watts_per_chip:,.0f} W per chip, {self.kind}, {self.covers}: {self.document}, {self.locator}"


POWER: dict[str, PowerFigure] = {
    # NVIDIA H200 SXM (conf/hardware/cuda.yaml models an H200 SXM). 700 W is the board's
    # maximum TDP (configurable down); the MLPerf Inference v4.1 system description of NVIDIA's
    # own 8x H200 SXM submission states it as "H200 TGP 700W".
    "cuda": PowerFigure(
        700.0,
        "tdp",
        "one H200 SXM GPU board; no host, NVSwitch or cooling",
        "NVIDIA H200 Tensor Core GPU datasheet (2024), 'Max thermal design power (TDP): up to 700W "
        "(configurable)'; corroborated by mlcommons/inference_results_v4.1",
        "closed/NVIDIA/systems/H200-SXM-141GBx8_TRT_MaxQ.json, field hw_notes 'H200 TGP 700W'",
    ),
    # Cerebras CS-2: one WSE-2 per 15U system; dabench counts one chip per CS-2 (hardware/wse2.yaml
    # chips_per_node: 1). Cerebras' figure as reported by Golem.de; the CS-1 of the same form
    # factor was 20 kW peak (AnandTech, 2020).
    "wse2": PowerFigure(
        23000.0,
        "max",
        "one CS-2 system (wafer, power supplies, fans, pumps); no MemoryX, SwarmX or CPU cluster",
        "Golem.de, 'Cerebras WSE2: Dieser AI-Prozessor braucht ueber 20 Kilowatt' (April 2021), quoting Cerebras",
        "paragraph on the CS-2 15U systems: 'maximale Leistungsaufnahme eines solchen Systems bei 23 Kilowatt'",
    ),
    # Graphcore Bow-2000: 4 Bow IPUs in a 1U machine, 1.25 kW average (Graphcore's figure, reported
    # by eeNews Europe); 1,250 W / 4 = 312.5 W per IPU.
    "ipu": PowerFigure(
        1250.0 / 4,
        "average",
        "a quarter of one Bow-2000 machine (4 IPUs, streaming memory, gateway); no host server",
        "eeNews Europe, N. Flaherty, 'Graphcore details power for Bow AI unit' (2022), quoting Graphcore",
        "'The 1U unit integrated four of the new Bow processors ... with an average power of 1.25kW'",
    ),
    # SambaNova SN30: no public power figure found (SambaNova's site-preparation pages say power is
    # discussed per site with a representative).
    "rdu": PowerFigure(None, "unsourced", "no public SN30 / DataScale SN30-8 power figure found", "", ""),
    # This machine's CPU: its TDP depends on the part; not looked up.
    "cpu": PowerFigure(None, "unsourced", "this machine's CPU: no TDP looked up", "", ""),
}


def power_figure(platform: str) -> PowerFigure:
    return POWER.get(platform, PowerFigure(None, "unsourced", f"no power figure for {platform}", "", ""))
