"""Test hooks that make one rank fail mid-run, to check that the job fails cleanly.

Set in the launcher's environment (the ranks inherit it):

- ``DABENCH_TEST_KILL_RANK=<rank>`` and ``DABENCH_TEST_KILL_AT_STEP=<step>`` (0-based, counting
  warm-up steps): that rank fails at the start of that step;
- ``DABENCH_TEST_FAULT=kill|raise|hang`` (default ``kill``): SIGKILL itself, raise a
  RuntimeError, or sleep forever (a hung rank, ended by the launcher's timeout).

Nothing happens when ``DABENCH_TEST_KILL_RANK`` is unset.
"""

from __future__ import annotations

import os
import signal
import time

FAULT_KINDS = ("kill", "raise", "hang")


def maybe_fail(rank: int, step: int) -> None:
    """Inject the configured fault if this is the chosen rank and step."""
    chosen = os.environ.get("DABENCH_TEST_KILL_RANK")
    if chosen is None or int(chosen) != rank or int(os.environ.get("DABENCH_TEST_KILL_AT_STEP", "0")) != step:
        return
    kind = os.environ.get("DABENCH_TEST_FAULT", "kill")
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "raise":
        raise RuntimeError(f"injected fault: rank {rank} raised at step {step} (DABENCH_TEST_FAULT=raise)")
    elif kind == "hang":
        while True:
            time.sleep(60)
    else:
        raise ValueError(f"DABENCH_TEST_FAULT={kind!r}: must be one of {', '.join(FAULT_KINDS)}")
