"""One rank: ``python -m dabench.distributed.worker <spec.json>``.
The spec names a target ``module:function``, its JSON payload and a result folder; the rank's
identity comes from torchrun's environment. It writes ``result.<rank>.json`` or
``error.<rank>.json`` (docs/distributed.md, "How a run is launched"). A target that joins a
process group does so in :func:`process_group`, which ends the backend's threads on the way out.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1  #: prctl option (linux/prctl.h): signal this process when its parent dies


@dataclass(frozen=True)
class RankEnv:
    """Who this rank is and how to rendezvous."""

    rank: int
    world_size: int
    local_rank: int
    init_method: str
    timeout_s: float

    @classmethod
    def from_environ(cls, init_method: str = "env://", timeout_s: float = 300.0) -> "RankEnv":
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        return cls(rank, world, int(os.environ.get("LOCAL_RANK", rank)), init_method, timeout_s)


def die_with_launcher() -> None:
    """Ask Linux to SIGKILL this rank when the launcher process dies, so that no rank outlives
    it. No-op where prctl is unavailable or when not started by the dabench launcher."""
    launcher = os.environ.get("DABENCH_LAUNCHER_PID")
    if not launcher or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(launcher):  # the launcher died before prctl took effect
        os._exit(1)


@contextlib.contextmanager
def process_group(env: RankEnv, device: Any = None):
    """The default group (nccl on a CUDA ``device``, else gloo) for the block. On the way out its
    last reference goes, so that the backend joins its worker threads here, while the interpreter
    is alive: a gloo worker still releasing an async work's tensors when the interpreter finalizes
    cannot take the GIL and aborts the rank (``terminate called without an active exception``).
    What the block built (DDP, ZeRO, FSDP) must be unreachable by then; reference cycles are
    collected first. A block that raises only destroys the group (its frames hold the wrappers)."""
    import torch.distributed as dist

    cuda = device is not None and device.type == "cuda"
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        init_method=env.init_method,
        rank=env.rank,
        world_size=env.world_size,
        timeout=timedelta(seconds=env.timeout_s),
        **({"device_id": device} if cuda else {}),
    )
    try:
        yield
    except BaseException:  # the rank's error is recorded first: no wait on work a dead peer holds up
        dist.destroy_process_group()
        raise
    gc.collect()
    dist.destroy_process_group()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(data))
    partial.replace(path)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m dabench.distributed.worker <spec.json>", file=sys.stderr)
        return 2
    die_with_launcher()
    spec = json.loads(Path(argv[1]).read_text())
    out = Path(spec["result_dir"])
    env = RankEnv.from_environ(spec.get("init_method", "env://"), float(spec.get("timeout_s", 300.0)))
    try:
        module, _, name = spec["target"].partition(":")
        result = getattr(importlib.import_module(module), name)(spec["payload"], env)
    except BaseException as error:  # record whatever ended this rank, for the launcher's reason
        record = {"error": f"{type(error).__name__}: {error}".strip(), "time": time.time()}
        _write_json(out / f"error.{env.rank}.json", {**record, "traceback": traceback.format_exc()})
        traceback.print_exc()
        sys.stderr.flush()
        return 1
    _write_json(out / f"result.{env.rank}.json", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
