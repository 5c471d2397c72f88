"""An artifact folder is untrusted input: read only regular files inside it, within limits.

:func:`scan` sorts a folder's entries, without following links, into regular files within the
limits below and skipped entries with their reason; :func:`checked_copy` copies the readable ones
into a private folder, opened with ``O_NOFOLLOW`` and checked again (docs/reliability.md).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE_BYTES = 256 * 2**20
MAX_TOTAL_BYTES = 1024 * 2**20
MAX_DEPTH = 8
MAX_FILES = 5000


@dataclass
class Scan:
    """``files``: paths relative to the root that may be read; ``skipped``: "path: why"."""

    root: Path
    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a fifo"), (stat.S_ISCHR, "a character device"))
_KINDS += ((stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str | None:
    """What a non-regular, non-folder entry is (None for a regular file or a folder)."""
    return next((name for test, name in _KINDS if test(mode)), None)


def shown(relative: Path | str) -> str:
    """An entry's name as one printable line: a name with a newline, a control character or
    bytes that are not UTF-8 is shown quoted with escapes (``'a\\nb'``)."""
    text = str(relative)
    return text if text.isprintable() else ascii(text)


def check_file(path: Path) -> str | None:
    """Why a file named on the command line may not be read (None: it may). A link the user
    named is followed; what it points to must be a regular file that this process may open."""
    try:
        info = os.stat(path)
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if not stat.S_ISREG(info.st_mode):
        return f"is {kind_of(info.st_mode) or 'not a regular file'}, not a regular file; skipped"
    if info.st_size > MAX_FILE_BYTES:
        return f"is larger than {MAX_FILE_BYTES // 2**20} MiB; skipped"
    try:  # a regular file (checked above), so opening it cannot block
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    return None


def scan(
    root: Path,
    *,
    max_depth: int = MAX_DEPTH,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_files: int = MAX_FILES,
) -> Scan:
    """Sort the entries under ``root`` (see module docstring); links are never followed."""
    root = Path(root)
    out = Scan(root)
    total = 0

    def unreadable(error: OSError) -> None:  # a folder that cannot be listed: named, not silently dropped
        where = Path(error.filename) if error.filename else root
        out.skipped.append(f"{shown(where.relative_to(root))}: cannot be read ({error.strerror or error})")

    for folder, dirs, names in os.walk(root, onerror=unreadable, followlinks=False):
        here = Path(folder)
        depth = len(here.relative_to(root).parts)
        for name in sorted(dirs):
            sub = here / name
            if os.path.islink(sub):
                out.skipped.append(f"{shown(sub.relative_to(root))}: a symbolic link (not followed)")
                dirs.remove(name)
            elif depth + 1 > max_depth:
                out.skipped.append(f"{shown(sub.relative_to(root))}: deeper than {max_depth} folders")
                dirs.remove(name)
        dirs.sort()
        for name in sorted(names):
            path = here / name
            relative = path.relative_to(root)
            try:
                info = os.lstat(path)
            except OSError as error:
                out.skipped.append(f"{shown(relative)}: cannot be read ({error.strerror or error})")
                continue
            kind = kind_of(info.st_mode)
            if kind is not None:
                out.skipped.append(f"{shown(relative)}: {kind}")
            elif info.st_size > max_file_bytes:
                out.skipped.append(f"{shown(relative)}: larger than {max_file_bytes // 2**20} MiB")
            elif len(out.files) >= max_files:
                out.skipped.append(f"{shown(relative)}: more than {max_files} files")
            elif total + info.st_size > max_total_bytes:
                out.skipped.append(f"{shown(relative)}: over {max_total_bytes // 2**20} MiB in all")
            else:
                total += info.st_size
                out.files.append(relative)
    return out


def checked_copy(root: Path, dest: Path) -> Scan:
    """:func:`scan` ``root`` and copy its readable files to ``dest`` (same relative paths)."""
    found = scan(root)
    kept = []
    for relative in found.files:
        source = Path(root) / relative
        try:
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as error:
            found.skipped.append(f"{shown(relative)}: cannot be opened ({error.strerror or error})")
            continue
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                found.skipped.append(f"{shown(relative)}: changed while being read")
                continue
            target = Path(dest) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(handle.read(info.st_size + 1)[: info.st_size])
        kept.append(relative)
    found.files = kept
    return found
