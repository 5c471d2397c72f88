"""Find processes started by a given dabench launcher (their environment names its pid)."""

import os


def ranks_of_launcher(launcher_pid: int) -> list[int]:
    """PIDs of live processes whose environment has DABENCH_LAUNCHER_PID=<launcher_pid>."""
    marker = f"DABENCH_LAUNCHER_PID={launcher_pid}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    with open(f"/proc/{entry}/stat") as stat:
                        if stat.read().split(")")[-1].split()[0] != "Z":  # zombies are already dead
                            found.append(int(entry))
        except OSError:
            continue
    return found
