"""Vendor artifact parsers: detect what a path is and parse it into an
:class:`~dabench.ingest.artifact.ArtifactReport` (then, with step times, a Profile).

Each platform's parser (its record's ``ingest``: ``detect``, ``parse``, ``LOOKS_FOR``) knows its
formats (its record's ``formats``); formats: docs/vendors.md, "Artifact parsers".
"""

from __future__ import annotations

from pathlib import Path

from dabench.core.numbers import bad_metrics
from dabench.core.platforms import registry
from dabench.ingest.artifact import ArtifactReport
from dabench.ingest.config import stated_config
from dabench.ingest.safety import check_file, checked_copy


def _parsers() -> list:
    return [p.ingest() for p in registry().values() if p.ingest]


def detect(path: str | Path) -> tuple[str, Path]:
    """(format, the path to parse) for a file or folder, as the first platform's parser that knows
    it says; ValueError names what was looked for."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    for parser in _parsers():
        found = parser.detect(path)
        if found:
            return found
    looked = "; ".join(parser.LOOKS_FOR for parser in _parsers())
    kind = "unknown artifact file" if path.is_file() else "no known vendor artifacts found"
    raise ValueError(f"{path}: {kind}; looked for: {looked}")


#: what a parser may raise on well-formed-looking but hostile input (a JSON list where an object
#: belongs, a missing key, nesting too deep, a file that vanished): a refusal, never a traceback
_BAD_INPUT = (OSError, ValueError, LookupError, TypeError, AttributeError, ArithmeticError, RecursionError)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def parse(path: str | Path) -> ArtifactReport:
    """Detect and parse ``path``, reading only what :mod:`dabench.ingest.safety` allows: a
    folder (or a file whose format is its folder) is parsed from a checked copy of its regular
    files; what was skipped is in ``report.skipped`` (``to_dict()["skipped"]``). Anything that
    cannot be parsed is a ValueError with a one-line reason (tests/ingest/test_fuzz.py), and so is
    a report with a figure the one number guard refuses (:func:`dabench.core.numbers.bad_metrics`)."""
    try:
        report = _parse(Path(path))
        why = bad_metrics(report.metrics())
        if why:
            raise ValueError(f"{path}: {why}")
        return report
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
        return next(p.ingest() for p in registry().values() if fmt in p.formats).parse(fmt, target)
    except _BAD_INPUT as error:
        if isinstance(error, ValueError) and str(target) in str(error):  # a parser's own refusal
            raise
        raise ValueError(f"{target}: not a readable {fmt} artifact ({type(error).__name__}: {error})") from None
