"""Whether a process id still names a running process (another user's counts), and when it started
(Linux /proc, so a reused pid can be told apart). docs/reliability.md, section 2."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_ticks(pid: int) -> int | None:
    """Process ``pid``'s start time in clock ticks since boot (/proc/<pid>/stat field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None
