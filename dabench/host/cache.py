"""Where the calibration cache lies: ``$DABENCH_CACHE_DIR/calibration.json``, or, where that folder
cannot be written (a read-only or missing HOME), a file in this user's temporary folder, said once
per process. The cache is optional: a run never stops for it."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from dabench.runtime.sinks import calibration_cache_path

log = logging.getLogger("dabench")
_CHOSEN: dict[str, Path] = {}  #: configured path (or why none) -> the path used


def writable_folder(folder: Path) -> bool:
    """Whether ``folder`` can be written, or created under its nearest existing ancestor."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


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
        if configured is not None and not why and writable_folder(configured.parent):
            _CHOSEN[key] = configured
        else:
            _CHOSEN[key] = temporary_cache()
            log.warning(
                "calibration cache: %s cannot be written (%s); using %s for now (set DABENCH_CACHE_DIR to keep it)",
                configured.parent if configured is not None else "~/.cache/dabench",
                why or "read-only or missing",
                _CHOSEN[key],
            )
    return _CHOSEN[key]
