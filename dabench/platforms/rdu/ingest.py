"""SambaFlow compile folders and SambaTune reports.
Formats and metrics: docs/vendors.md, "Artifact parsers".
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from dabench.core.profile import UnitUse
from dabench.ingest.artifact import MEASURED, ArtifactReport, ArtifactSubtask

_SECTION_FILE = re.compile(r"\.s(\d+)\.utilization_report\.json$")
_BW_ROW = re.compile(
    r"^\s*\{(\d+),\s*(\d+)\}\s+(\w+)\s+([\d.]+),\s+(\d+),\s+([\d.]+),\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
)
#: the byte counts of arc_gen/reports/ddr_bw_estimate.report, summed over its chips and entries
DDR_KEYS = ("data_load_size", "data_store_size", "weight_load_size", "grad_store_size")


def is_compile_folder(folder: Path) -> bool:
    return any(folder.glob("*.utilization_report.json")) or (folder / "stage_buffers").is_dir()


def _section_usage(report: dict[str, Any], fallback_id: int) -> tuple[int, dict[str, float], float]:
    """(section id, {kind: units used}, units available per kind) of one utilization report."""
    sections = {t.get("section_id") for t in report.get("templates", {}).values() if "section_id" in t}
    section = sections.pop() if len(sections) == 1 else fallback_id
    used = report.get("used", {}).get("total", {})
    available = report.get("available", {})
    per_kind = float(available.get("fcmus", 0)) * max(1, int(available.get("chips", 1)))
    return int(section), {"pcus": float(used.get("pcus", 0)), "pmus": float(used.get("pmus", 0))}, per_kind


def stage_load_imbalance(latencies_by_section: dict[int, list[float]]) -> float | None:
    """LI = sum_s mean_s / sum_s max_s over sections with a positive stage latency."""
    positive = [p for p in ([x for x in latencies if x > 0] for latencies in latencies_by_section.values()) if p]
    maxes = sum((max(p) for p in positive), 0.0)
    return sum((sum(p) / len(p) for p in positive), 0.0) / maxes if maxes else None


def parse_bandwidth_txt(text: str) -> list[dict[str, Any]]:
    """Rows of the 'Total bandwidth report for Data Vector/Scalar connection' tables."""
    rows, network = [], None
    for line in text.splitlines():
        if line.startswith("Total bandwidth report for Data"):
            network = line.split("Data", 1)[1].split()[0].lower()
            continue
        match = _BW_ROW.match(line)
        if match and network:
            rows.append(
                {
                    "network": network,
                    "partition": f"{match.group(1)},{match.group(2)}",
                    "timing_group": match.group(3),
                    "provisioned_total": float(match.group(4)),
                    "edges": int(match.group(5)),
                    "switch2switch": float(match.group(8)),
                    "bw_ratio": float(match.group(9)),
                }
            )
    return rows


def _column(row: dict[str, str], *needles: str) -> float | None:
    for key, value in row.items():
        if all(n in key for n in needles):
            try:
                return float(value)
            except ValueError:
                return None
    return None


def apply_sambatune(report: ArtifactReport, path: Path) -> None:
    """Add a SambaTune section_report.csv's measured figures (throughput 1 / sum_s(1 / rate_s))."""
    report.files.append(str(path))
    with path.open(newline="") as handle:  # keyed by lower-cased column names
        rows = [{k.strip().lower(): (v or "").strip() for k, v in row.items() if k} for row in csv.DictReader(handle)]
    sections = [
        {
            "section_id": row.get("section_id"),
            "type": row.get("section type"),
            "samples_per_s": _column(row, "throughput"),
            "latency_s": _column(row, "latency", "sec"),
            "pcus": _column(row, "pcu count"),
            "pmus": _column(row, "pmu count"),
            "ddr_total_GBps": _column(row, "ddr", "total"),
        }
        for row in rows
    ]
    report.details["sambatune_sections"] = sections
    if not report.subtasks:  # a section_report.csv on its own: the sections are the subtasks
        report.subtasks.extend(
            ArtifactSubtask(
                name=f"section{s['section_id']}",
                time_s=s["latency_s"],
                rate=s["samples_per_s"],
                units={k: s[k] for k in ("pcus", "pmus") if s[k] is not None},
                group=s["type"],
            )
            for s in sections
        )
        report.load_imbalance_basis = "measured section latency (sections run one after another)"
    rates = [s["samples_per_s"] for s in sections if s["samples_per_s"]]
    if rates:
        report.samples_per_s = 1.0 / sum(1.0 / r for r in rates)
        report.throughput_basis = MEASURED + " (SambaTune section_report.csv)"
    latencies = [s["latency_s"] for s in sections if s["latency_s"] is not None]
    if latencies:
        report.extra["rdu.measured_sections_time_s"] = sum(latencies)


def parse_compile_folder(folder: str | Path) -> ArtifactReport:
    """Parse a SambaFlow compile output folder (module doc). Raises ValueError if it is not one."""
    folder = Path(folder)
    if not folder.is_dir() or not is_compile_folder(folder):
        raise ValueError(f"{folder}: not a SambaFlow compile folder (no *.utilization_report.json or stage_buffers/)")
    report = ArtifactReport(source="sambaflow_compile", subtask_kind="section_stage")
    sections: dict[int, dict[str, float]] = {}
    available = 0.0
    for path in sorted(folder.glob("*.utilization_report.json")):
        match = _SECTION_FILE.search(path.name)
        try:
            data = json.loads(path.read_text())
        except ValueError as error:
            report.problems.append(f"{path.name} is not valid JSON (truncated? {error})")
            continue
        section, used, per_kind = _section_usage(data, int(match.group(1)) if match else len(sections))
        sections[section] = used
        available = max(available, per_kind)
        report.files.append(str(path))
    if sections and available:
        for kind in ("pcus", "pmus"):
            ratios = [used[kind] / available for used in sections.values()]
            report.units[kind] = UnitUse(
                allocated=sum(u[kind] for u in sections.values()) / len(sections), available=available
            )
            report.extra[f"rdu.allocation_ratio_max.{kind}"] = max(ratios)
        report.extra["rdu.sections"] = float(len(sections))
    report.details["sections"] = [{"section_id": s, **used} for s, used in sorted(sections.items())]
    if sections and sorted(sections) != list(range(max(sections) + 1)):
        gaps = sorted(set(range(max(sections) + 1)) - set(sections))
        report.problems.append(f"utilization reports of section(s) {gaps} missing (have {sorted(sections)})")

    latencies: dict[int, list[float]] = {}
    stage_files = sorted((folder / "stage_buffers").glob("stage_info_*.json"))
    stages = [s for p in stage_files for s in report.read_json(p, f"stage_buffers/{p.name}", []) if isinstance(s, dict)]
    for stage in stages:
        section, latency = int(stage.get("section_id", -1)), float(stage.get("prism_stage_latency", 0) or 0)
        templates = stage.get("template_info", [])
        units = {kind: float(sum(t.get(f"{kind[:3]}_count", 0) for t in templates)) for kind in ("pcus", "pmus")}
        chip = stage.get("chip_id", 0)
        name = f"section{section}.stage{stage.get('stage_id')}" + (f".chip{chip}" if chip else "")
        report.subtasks.append(
            ArtifactSubtask(name=name, cycles=latency if latency > 0 else None, units=units, group=f"section{section}")
        )
        latencies.setdefault(section, []).append(latency)
    orphans = sorted(set(latencies) - set(sections))
    if sections and orphans:
        report.problems.append(f"stages of section(s) {orphans} have no utilization report")

    report.files.extend(str(p) for p in stage_files)
    report.load_imbalance = stage_load_imbalance(latencies)
    if report.load_imbalance is not None:
        report.load_imbalance_basis = "prism_stage_latency per section stage: LI = sum_s mean_s / sum_s max_s"
        slowest = max((s for s in report.subtasks if s.cycles), key=lambda s: s.cycles)
        report.bottleneck = slowest.name
        report.extra["rdu.max_stage_latency_cycles"] = slowest.cycles

    for path in sorted(folder.glob("*_bandwidth_statistics.txt")):
        rows = parse_bandwidth_txt(path.read_text(errors="replace"))
        report.files.append(str(path))
        report.details.setdefault("bandwidth", []).extend(rows)
        report.extra.update(
            {
                f"rdu.bw_ratio_max.{network}": max(r["bw_ratio"] for r in rows if r["network"] == network)
                for network in {r["network"] for r in rows}
            }
        )
    ddr = folder / "arc_gen" / "reports" / "ddr_bw_estimate.report"
    if ddr.exists():
        report.files.append(str(ddr))
        entries = [entry for chips in json.loads(ddr.read_text()).values() for entry in chips.values()]
        report.extra.update(
            {
                f"rdu.ddr.{key.replace('_size', '_bytes')}": sum(float(entry.get(key, 0)) for entry in entries)
                for key in DDR_KEYS
                if entries
            }
        )
    dram = folder / "prism_gen" / "reports" / "dram_analysis.json"
    if dram.exists():
        report.files.append(str(dram))
        partitions = json.loads(dram.read_text())
        report.details["dram_analysis"] = {
            part: {
                level: {k: v for k, v in values.items() if k.startswith(("estimated_bw", "predicted_"))}
                for level, values in entry.items()
                if isinstance(values, dict) and level in ("DDR", "HOST")
            }
            for part, entry in partitions.items()
            if isinstance(entry, dict)
        }
    tune = next(iter(sorted(folder.rglob("section_report.csv"))), None)
    if tune is not None:
        apply_sambatune(report, tune)
    return report


LOOKS_FOR = "*.utilization_report.json, stage_buffers/, a SambaTune section_report.csv"


def detect(path: Path) -> tuple[str, Path] | None:
    """(format, the path to parse) of a SambaFlow or SambaTune file or folder, or None."""
    if path.is_file():
        if path.name.endswith(".utilization_report.json"):
            return "sambaflow_compile", path.parent
        return ("sambatune_section_report", path) if path.name == "section_report.csv" else None
    return ("sambaflow_compile", path) if is_compile_folder(path) else None


def parse(fmt: str, target: Path) -> ArtifactReport:
    if fmt == "sambaflow_compile":
        return parse_compile_folder(target)
    report = ArtifactReport(source=fmt, subtask_kind="section")
    apply_sambatune(report, target)
    return report
