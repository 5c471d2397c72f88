"""Cerebras artifacts: R1.x layer-pipelined ``compile_report.txt`` and R2.x appliance run folders.
Formats and metrics: docs/vendors.md, "Artifact parsers".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from dabench.core.profile import UnitUse
from dabench.ingest.artifact import COMPILER_ESTIMATE, MEASURED, ArtifactReport, ArtifactSubtask
from dabench.metrics import tier1

#: kernel class by top-level kernel name prefix (first match wins); everything else is "other"
KERNEL_CLASSES = (
    ("attention", re.compile(r"^(attention|attn|mha|self_attn)")),
    ("fc", re.compile(r"^(fc|linear|dense|ffn|mlp)")),
    ("embedding", re.compile(r"^(emb|embedding|pos_encoding|position)")),
    ("loss", re.compile(r"^(mlm_loss|loss|cross_entropy|ce_loss|nll)")),
    ("norm", re.compile(r"^(layer_norm|layernorm|lnorm|norm|rms_norm)")),
)
CLASS_NAMES = tuple(name for name, _ in KERNEL_CLASSES) + ("other",)

_HEADER = re.compile(
    r"^(Samples/s|Compute Samples/s|Transmission Samples/s|Active PEs|Compute Utilization):\s*([\d.]+)\s*(%?)\s*$"
)
_RATE_LINE = re.compile(r"Step=(\d+).*?Rate=([\d.]+) samples/sec, GlobalRate=([\d.]+) samples/sec")
_BATCH_LINE = re.compile(r"Effective batch size is (\d+)")
#: compile-report header line -> its metric
HEADER_METRICS = {
    "Compute Samples/s": "cerebras.compute_samples_per_s",
    "Transmission Samples/s": "cerebras.transmission_samples_per_s",
    "Active PEs": "cerebras.active_pes_reported",
    "Compute Utilization": "cerebras.compute_utilization",
}


def kernel_class(name: str) -> str:
    """The class of a top-level kernel name: attention, fc, embedding, loss, norm or other."""
    return next((cls for cls, pattern in KERNEL_CLASSES if pattern.match(name)), "other")


def _number(cell: str) -> float | None:
    cell = cell.strip().rstrip("%").replace(",", "")
    if not cell or cell == "--":
        return None
    return float(cell)


def parse_compile_report(text: str, path: str | None = None) -> ArtifactReport:
    """Parse a compile_report.txt (see module doc). Raises ValueError if it is not one."""
    header: dict[str, float] = {}
    rows: list[tuple[str, list[float | None]]] = []
    for line in text.splitlines():
        match = _HEADER.match(line.strip())
        if match:
            value = float(match.group(2))
            header[match.group(1)] = value / 100.0 if match.group(3) else value
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or not cells[0] or cells[0] == "Kernel Name":
            continue
        rows.append((cells[0], [_number(c) for c in cells[1:6]]))
    if "Samples/s" not in header or not rows:
        raise ValueError(f"{path or 'text'}: not a Cerebras compile report (no 'Samples/s' header or kernel table)")

    budget = next((vals[3] for name, vals in rows if name == "patio"), None)
    kernels = [(name, vals) for name, vals in rows if "." not in name and name != "patio"]
    allocated = sum(vals[3] or 0.0 for _, vals in kernels)
    report = ArtifactReport(source="cerebras_compile_report", files=[path] if path else [], subtask_kind="kernel")
    report.problems.extend(compile_report_problems(text, header, rows, kernels, budget, allocated))
    if budget:
        report.units["pes"] = UnitUse(allocated=allocated, available=budget)
    elif header.get("Active PEs"):
        report.notes.append("no patio row: PE budget inferred from the header's rounded Active PEs %")
        report.units["pes"] = UnitUse(allocated=allocated, available=allocated / header["Active PEs"])
    report.subtasks.extend(
        ArtifactSubtask(
            name=name,
            rate=rate,
            units={"pes": pes or 0.0},
            group=kernel_class(name),
            utilization=util / 100.0 if util is not None else None,
        )
        for name, (rate, _compute, _transmission, pes, util) in kernels
    )
    rated = [s for s in report.subtasks if s.rate]
    if rated:
        report.bottleneck = min(rated, key=lambda s: s.rate).name
    report.samples_per_s = header["Samples/s"]
    report.throughput_basis = COMPILER_ESTIMATE
    report.load_imbalance_basis = "per-kernel samples/s (LI = mean(1/r) / max(1/r))"
    extra = report.extra
    extra.update({name: header[key] for key, name in HEADER_METRICS.items() if key in header})
    extra["cerebras.kernels"] = float(len(kernels))
    compute_costs = [1.0 / s.rate for s in rated if s.group in ("attention", "fc")]
    if compute_costs:
        extra["cerebras.load_imbalance.compute_kernels"] = tier1.load_imbalance(compute_costs)
    if allocated:
        extra.update(
            {
                f"cerebras.pe_share.{cls}": sum(s.units["pes"] for s in report.subtasks if s.group == cls) / allocated
                for cls in CLASS_NAMES
            }
        )
        weighted = [(s.units["pes"], s.utilization) for s in report.subtasks if s.utilization is not None]
        if weighted:
            extra["cerebras.pe_weighted_utilization"] = sum(p * u for p, u in weighted) / sum(p for p, _ in weighted)
    return report


#: tolerances of the consistency checks: the header's Samples/s against the slowest kernel
#: (relative), and its Active PEs % (printed rounded to a whole percent) against the table's sum
RATE_TOLERANCE = 1e-3
ACTIVE_PES_TOLERANCE = 0.006


def compile_report_problems(
    text: str, header: dict[str, float], rows: list, kernels: list, budget: float | None, allocated: float
) -> list[str]:
    """Why a compile report is truncated or inconsistent ([] when complete): an unclosed kernel
    table, a missing header line or ``patio`` row, a sub-kernel without its kernel's row, or
    header totals (Samples/s, Active PEs %) that the table does not reproduce."""
    problems: list[str] = []
    table = [line.rstrip() for line in text.splitlines() if line.startswith(("|", "+"))]
    if table and not table[-1].startswith("+"):
        problems.append(f"the kernel table is not closed (file cut after {len(rows)} rows)")
    missing = [key for key in ("Samples/s", "Active PEs") if key not in header]
    if missing:
        problems.append(f"header lines missing: {', '.join(missing)}")
    if budget is None:
        problems.append("no patio row (the PE budget of the compiled region)")
    top = {name for name, _ in kernels}
    # (``buf.*`` and other namespaces that are not kernels never have a row of their own)
    orphans = sorted(
        prefix
        for prefix in {name.split(".", 1)[0] for name, _ in rows if "." in name} - top
        if kernel_class(prefix) != "other"
    )
    if orphans:
        problems.append(
            f"{len(orphans)} kernel(s) listed only by their sub-kernels, without their own row (e.g. {orphans[0]})"
        )
    rates = [vals[0] for _, vals in kernels if vals[0]]
    if rates and "Samples/s" in header and abs(min(rates) - header["Samples/s"]) > RATE_TOLERANCE * header["Samples/s"]:
        problems.append(f"header Samples/s {header['Samples/s']:g} is not the slowest kernel's {min(rates):g}")
    if budget and "Active PEs" in header and abs(allocated / budget - header["Active PEs"]) > ACTIVE_PES_TOLERANCE:
        problems.append(
            f"header Active PEs {header['Active PEs']:.0%} but the table sums to "
            f"{allocated:,.0f} / {budget:,.0f} = {allocated / budget:.1%}"
        )
    return problems


def flatten_track(track: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """track.json ``{name: [seconds, {children}]}`` -> ``{"parent/child": seconds}``."""
    out: dict[str, float] = {}
    for name, value in track.items():
        if isinstance(value, list) and value and isinstance(value[0], (int, float)):
            out[prefix + name] = float(value[0])
            if len(value) > 1 and isinstance(value[1], dict):
                out.update(flatten_track(value[1], prefix + name + "/"))
    return out


def _executor_dir(folder: Path) -> Path | None:
    if (folder / "performance.json").exists() or (folder / "track.json").exists():
        return folder
    executors = folder / "executors"
    if not executors.is_dir():
        return None
    latest = executors / "latest"
    if latest.exists():
        return latest.resolve()
    numbered = sorted((p for p in executors.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))
    return numbered[-1] if numbered else None


def parse_appliance_run(folder: str | Path) -> ArtifactReport:
    """Parse a cstorch 2.x run folder (or an ``executors/<n>`` folder): measured rates and phase
    timings. ``samples_per_s``: performance.json's samples_per_sec when present, else the last
    GlobalRate in run.log; step times = batch / Rate for each logged Rate line."""
    folder = Path(folder)
    report = ArtifactReport(source="cerebras_appliance_run", subtask_kind="kernel")
    executor = _executor_dir(folder)
    run_log = next((p for p in (folder / "run.log", folder.parent.parent / "run.log") if p.exists()), None)
    if executor is None and run_log is None:
        raise ValueError(
            f"{folder}: not a Cerebras appliance run (no executors/<n>/performance.json, track.json or run.log)"
        )
    if executor is not None:
        perf_path, track_path = executor / "performance.json", executor / "track.json"
        if perf_path.exists():
            report.files.append(str(perf_path))
            perf = report.read_json(perf_path, perf_path.name, {})
            keys = ("total_samples", "total_time", "rate", "global_rate", "samples_per_sec", "flops_utilization")
            report.extra.update(
                {f"cerebras.{k}": float(perf[k]) for k in keys if isinstance(perf.get(k), (int, float))}
            )
            if isinstance(perf.get("samples_per_sec"), (int, float)):
                report.samples_per_s, report.throughput_basis = float(perf["samples_per_sec"]), MEASURED
            if not perf:
                report.notes.append("performance.json is empty (the run ended before the executor finished)")
        if track_path.exists():
            report.files.append(str(track_path))
            report.phases_s = flatten_track(report.read_json(track_path, track_path.name, {}))
            report.extra.update(
                {
                    f"cerebras.phase_s.{re.sub(r'[^A-Za-z0-9_]+', '_', name).strip('_').lower()}": seconds
                    for name, seconds in report.phases_s.items()
                    if "/" not in name
                }
            )
        tasks: dict[str, int] = {}
        for details in sorted(executor.glob("*-cluster-details.json")):
            report.files.append(str(details))
            counts: Counter[str] = Counter()
            for task in json.loads(details.read_text()).get("tasks", []):
                counts[task.get("taskType", "?")] += len(task.get("taskMap", []))
            if len(counts) > len(tasks):  # the execute job lists the most task types
                tasks = counts
        report.extra.update({f"cerebras.tasks.{kind}": float(count) for kind, count in tasks.items()})
        meta_path = folder / "run_meta.json"
        if meta_path.exists():
            report.files.append(str(meta_path))
            meta = json.loads(meta_path.read_text())
            jobs = meta.get("execute_jobs", []) + meta.get("compile_jobs", [])
            report.info.update(
                {
                    f"cerebras.version.{name}": str(version)
                    for job in jobs
                    for name, version in (job.get("software_versions") or {}).items()
                }
            )
            systems = [len(job.get("system_versions") or {}) for job in meta.get("execute_jobs", [])]
            report.chips = max([1, *systems])

    if run_log is not None:
        report.files.append(str(run_log))
        text = run_log.read_text(errors="replace")  # a Model Zoo run.log: Rate= lines, the effective batch size
        rates = [(int(m.group(1)), float(m.group(2)), float(m.group(3))) for m in _RATE_LINE.finditer(text)]
        batch = _BATCH_LINE.search(text)
        if rates:
            report.extra["cerebras.global_rate_last"] = rates[-1][2]
            report.extra["cerebras.rate_lines"] = float(len(rates))
            if report.samples_per_s is None:
                report.samples_per_s, report.throughput_basis = rates[-1][2], MEASURED
            if batch:
                report.samples_per_step = int(batch.group(1))
                report.step_times_s = [report.samples_per_step / rate for _, rate, _ in rates if rate > 0]
    if report.samples_per_s is None:
        report.notes.append("no rate found (performance.json empty and no Rate= lines)")
    return report


LOOKS_FOR = "compile_report*.txt, executors/, performance.json/track.json/run.log of a cstorch run"


def _is_compile_report(path: Path) -> bool:
    try:
        head = path.read_text(errors="replace")[:4000]
    except (OSError, UnicodeDecodeError):
        return False
    return "Samples/s:" in head and "Kernel Name" in head


def _has_rate_log(path: Path) -> bool:
    return path.name == "run.log" and path.is_file() and "GlobalRate=" in path.read_text(errors="replace")


def detect(path: Path) -> tuple[str, Path] | None:
    """(format, the path to parse) of a Cerebras file or folder, or None."""
    if path.is_file():
        if path.name in ("performance.json", "track.json") or path.name.endswith("-cluster-details.json"):
            return "cerebras_appliance_run", path.parent
        if _is_compile_report(path):
            return "cerebras_compile_report", path
        return ("cerebras_appliance_run", path.parent) if _has_rate_log(path) else None
    reports = sorted(path.glob("compile_report*.txt")) + sorted(path.glob("cs_*/compile_report.txt"))
    if len(reports) > 1:
        raise ValueError(
            f"{path}: holds {len(reports)} compile reports; pass one of them: {', '.join(map(str, reports))}"
        )
    if reports:
        return "cerebras_compile_report", reports[0]
    if (path / "executors").is_dir() or (path / "performance.json").exists() or (path / "track.json").exists():
        return "cerebras_appliance_run", path
    return ("cerebras_appliance_run", path) if _has_rate_log(path / "run.log") else None


def parse(fmt: str, target: Path) -> ArtifactReport:
    if fmt == "cerebras_compile_report":
        return parse_compile_report(target.read_text(errors="replace"), str(target))
    return parse_appliance_run(target)
