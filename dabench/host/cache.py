"""The calibration cache: where it lies (``$DABENCH_CACHE_DIR/calibration.json``, or, where that
folder cannot be written, a file in this user's temporary folder, said once per process in one line
naming the folder and why) and :class:`CalibrationCache`, its one reader and writer. The cache is
optional: a run never stops for it."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from dabench.core.readers import DamagedFile, finite, mapping, read_json
from dabench.runtime.sinks import calibration_cache_path, locked, write_json

log = logging.getLogger("dabench")
MAX_RATE = 1e18  #: FLOP/s or bytes/s no one machine reaches (a calibration above it is damage)
_CHOSEN: dict[str, Path] = {}  #: configured path (or why none) -> the path used


def unwritable(folder: Path) -> str:
    """Why ``folder`` cannot be written or created under its nearest existing ancestor ("" when it can)."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            if not candidate.is_dir():
                return f"{candidate} is a file, not a folder"
            return "" if os.access(candidate, os.W_OK | os.X_OK) else f"no permission to write in {candidate}"
    return "no existing folder above it"


def temporary_cache() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"dabench-{uid}" / "calibration.json"


def calibration_cache() -> Path:
    """The configured calibration cache, or the temporary one when it cannot be written."""
    try:
        configured = calibration_cache_path()
        why = "" if configured.is_absolute() else "HOME is not set"
    except (RuntimeError, KeyError) as error:  # no HOME and no password entry
        configured, why = None, f"no home folder ({error})"
    key = str(configured)
    if key not in _CHOSEN:
        why = why or unwritable(configured.parent)  # no configured path: why says so already
        _CHOSEN[key] = temporary_cache() if why else configured
        if why:
            log.warning(
                "calibration cache: %s cannot be written (%s); using %s for now (point DABENCH_CACHE_DIR at a "
                "folder you may write to keep it)",
                configured.parent if configured is not None else "~/.cache/dabench",
                why,
                _CHOSEN[key],
            )
    return _CHOSEN[key]


class CalibrationCache:
    """The calibration cache file ``path`` (host/calibrate.py measures what it holds): read with
    every entry checked, updated under its lock so that processes that meet keep each other's
    entries, replaced whole."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else calibration_cache()

    def read(self) -> tuple[dict[str, dict], list[str]]:
        """``(entries, problems)``: a damaged entry is left out and named in ``problems``, one of
        the older format (a bare float) dropped silently; a damaged file is DamagedFile."""
        data = mapping(self.path, read_json(self.path, 2**20))
        good, problems = {}, []
        for key, entry in data.items():
            if not isinstance(entry, dict) or "value" not in entry:
                continue
            try:
                self._check(key, entry)
                good[key] = entry
            except DamagedFile as error:
                problems.append(str(error))
        return good, problems

    def _check(self, key: str, entry: dict) -> None:
        finite(self.path, entry["value"], f"{key}.value", positive=True, high=MAX_RATE)
        samples = entry.get("samples", [])
        if not isinstance(samples, (list, tuple)):  # a tuple: written as a list
            raise DamagedFile(self.path, f"{key}.samples is not a list")
        for i, x in enumerate(samples):
            finite(self.path, x, f"{key}.samples[{i}]", positive=True, high=MAX_RATE)
        finite(self.path, entry.get("spread", 0.0), f"{key}.spread", low=0.0)
        finite(self.path, entry.get("load_per_core", 0.0), f"{key}.load_per_core", low=0.0)
        if not isinstance(entry.get("measured_at", ""), str):
            raise DamagedFile(self.path, f"{key}.measured_at is not text")

    def update(self, key: str, entry: dict) -> None:
        """Store ``entry`` under ``key``, the file's other good entries kept (SinkError: one line)."""
        with locked("calibration_cache", self.path):
            try:
                entries, _ = self.read()
            except (FileNotFoundError, DamagedFile):
                entries = {}
            self._check(key, entry)
            write_json("calibration_cache", self.path, {**entries, key: entry}, indent=1, sort_keys=True)
