"""Vendor artifact parsers: detect what a path is and parse it into an
:class:`~dabench.ingest.artifact.ArtifactReport` (then, with step times, a Profile).

Formats (``cerebras_compile_report``, ``cerebras_appliance_run``, ``sambaflow_compile``,
``sambatune_section_report``, ``popvision_json``): docs/vendors.md, "Artifact parsers".
"""

from __future__ import annotations

import json
from pathlib import Path

from dabench.ingest.artifact import ArtifactReport
from dabench.ingest.config import stated_config
from dabench.ingest.ipu import is_popvision_json, parse_popvision_file
from dabench.ingest.rdu import apply_sambatune, is_compile_folder, parse_compile_folder
from dabench.ingest.safety import check_file, checked_copy
from dabench.ingest.wse2 import parse_appliance_run, parse_compile_report

FORMATS = (
    "cerebras_compile_report",
    "cerebras_appliance_run",
    "sambaflow_compile",
    "sambatune_section_report",
    "popvision_json",
)


def _is_compile_report(path: Path) -> bool:
    try:
        head = path.read_text(errors="replace")[:4000]
    except (OSError, UnicodeDecodeError):
        return False
    return "Samples/s:" in head and "Kernel Name" in head


def _json_format(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested too deep
        return None
    return "popvision_json" if is_popvision_json(data) else None


def detect(path: str | Path) -> tuple[str, Path]:
    """(format, the path to parse) for a file or folder; ValueError names what was looked for."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    if path.is_file():
        name = path.name
        if name.endswith(".utilization_report.json"):
            return "sambaflow_compile", path.parent
        if name in ("performance.json", "track.json") or name.endswith("-cluster-details.json"):
            return "cerebras_appliance_run", path.parent
        if name == "section_report.csv":
            return "sambatune_section_report", path
        if name.endswith(".json") and _json_format(path):
            return "popvision_json", path
        if _is_compile_report(path):
            return "cerebras_compile_report", path
        if name == "run.log" and "GlobalRate=" in path.read_text(errors="replace"):
            return "cerebras_appliance_run", path.parent
        raise ValueError(
            f"{path}: unknown artifact file; expected one of: a Cerebras compile_report.txt, "
            "performance.json/track.json/run.log of a cstorch run, a SambaFlow "
            "*.utilization_report.json, a SambaTune section_report.csv, a dabench PopVision JSON"
        )

    reports = sorted(path.glob("compile_report*.txt")) + sorted(path.glob("cs_*/compile_report.txt"))
    if len(reports) == 1:
        return "cerebras_compile_report", reports[0]
    if len(reports) > 1:
        raise ValueError(
            f"{path}: holds {len(reports)} compile reports; pass one of them: {', '.join(map(str, reports))}"
        )
    if (path / "executors").is_dir() or (path / "performance.json").exists() or (path / "track.json").exists():
        return "cerebras_appliance_run", path
    if is_compile_folder(path):
        return "sambaflow_compile", path
    for candidate in sorted(path.glob("*.json")):
        if _json_format(candidate):
            return "popvision_json", candidate
    if (path / "run.log").exists() and "GlobalRate=" in (path / "run.log").read_text(errors="replace"):
        return "cerebras_appliance_run", path
    raise ValueError(
        f"{path}: no known vendor artifacts found (looked for compile_report*.txt, executors/, "
        "*.utilization_report.json, stage_buffers/, a dabench PopVision JSON, run.log with GlobalRate=)"
    )


#: what a parser may raise on well-formed-looking but hostile input (a JSON list where an object
#: belongs, a missing key, nesting too deep, a file that vanished): a refusal, never a traceback
_BAD_INPUT = (OSError, ValueError, LookupError, TypeError, AttributeError, ArithmeticError, RecursionError)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def parse(path: str | Path) -> ArtifactReport:
    """Detect and parse ``path``, reading only what :mod:`dabench.ingest.safety` allows: a
    folder (or a file whose format is its folder) is parsed from a checked copy of its regular
    files; what was skipped is in ``report.skipped`` (``to_dict()["skipped"]``). Anything that
    cannot be parsed is a ValueError with a one-line reason (tests/ingest/test_fuzz.py)."""
    try:
        return _parse(Path(path))
    except ValueError as error:
        raise ValueError(_one_line(str(error))) from None
    except _BAD_INPUT as error:
        raise ValueError(_one_line(f"{path}: cannot be parsed ({type(error).__name__}: {error})")) from None


def _parse(path: Path) -> ArtifactReport:
    if path.is_dir():
        return _parse_checked_folder(path)
    problem = check_file(path) if path.exists() else None
    if problem:
        raise ValueError(f"{path}: {problem}")
    fmt, target = detect(path)
    if target.is_dir():
        return _parse_checked_folder(target)
    report = _parse_detected(fmt, target)
    # a single file: nothing beside it is read
    report.stated = stated_config(fmt, target, None, report.samples_per_step)
    return report


def _parse_checked_folder(folder: Path) -> ArtifactReport:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dabench-artifact-") as tmp:
        found = checked_copy(folder, Path(tmp))
        try:
            fmt, target = detect(tmp)
        except ValueError as error:
            skipped = f" (skipped: {'; '.join(found.skipped)})" if found.skipped else ""
            raise ValueError(str(error).replace(tmp, str(folder)) + skipped) from None
        try:
            report = _parse_detected(fmt, target)
        except ValueError as error:  # name the user's folder, not the private copy
            raise ValueError(str(error).replace(tmp, str(folder))) from None
        report.stated = stated_config(fmt, Path(target), Path(tmp), report.samples_per_step)
    report.files = [f.replace(tmp, str(folder), 1) if f.startswith(tmp) else f for f in report.files]
    report.skipped = list(found.skipped)
    return report


def _parse_detected(fmt: str, target: Path) -> ArtifactReport:
    try:
        return _parse_format(fmt, target)
    except _BAD_INPUT as error:
        if isinstance(error, ValueError) and str(target) in str(error):  # a parser's own refusal
            raise
        raise ValueError(f"{target}: not a readable {fmt} artifact ({type(error).__name__}: {error})") from None


def _parse_format(fmt: str, target: Path) -> ArtifactReport:
    if fmt == "cerebras_compile_report":
        return parse_compile_report(target.read_text(errors="replace"), str(target))
    if fmt == "cerebras_appliance_run":
        return parse_appliance_run(target)
    if fmt == "sambaflow_compile":
        return parse_compile_folder(target)
    if fmt == "sambatune_section_report":
        report = ArtifactReport(source=fmt, subtask_kind="section")
        apply_sambatune(report, target)
        return report
    return parse_popvision_file(target)
