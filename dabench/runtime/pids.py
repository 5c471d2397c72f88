"""Whether a process id still names a running process, and when that process started.

:func:`pid_alive` is ``os.kill(pid, 0)``: a pid that exists under another user counts as alive.
:func:`start_ticks` reads Linux /proc, so a reused pid can be told apart; None where /proc is absent.
Standard library only. docs/reliability.md, section 2.
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts)."""
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
