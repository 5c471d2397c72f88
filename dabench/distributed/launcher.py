"""Start N ranks as subprocesses, wait for them, and fail the whole job cleanly.
Any rank failure or ``timeout_s`` kills every rank and raises :class:`RankFailure` naming the
root-cause rank. Derivation: docs/distributed.md, "How a run is launched" and "Failure is a result".
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dabench.runtime import supervisor
from dabench.runtime.isolation import child_env
from dabench.runtime.supervisor import tail

GRACE_S = 2.0  #: after one rank fails, how long the others may take to record their own error
LOG_TAIL_CHARS = 1500


class RankFailure(RuntimeError):
    """A rank failed or the job hung; ``reason`` says which rank and why."""

    def __init__(self, reason: str, rank: int | None):
        super().__init__(reason)
        self.reason, self.rank = reason, rank


@dataclass
class RankExit:
    """How one rank ended: its exit code (negative: killed by that signal), its error record
    (written by the worker when it caught an exception) and the tail of its output."""

    rank: int
    returncode: int | None
    error: dict[str, Any] | None
    log_tail: str
    killed_by_launcher: bool = False

    def describe(self) -> str:
        if self.error:
            return f"{self.error['error']}\n{self.error.get('traceback', '')[-LOG_TAIL_CHARS:]}"
        code = self.returncode
        if code is not None and code < 0:
            how = f"killed by signal {signal.Signals(-code).name} (exit code {code})"
        else:
            how = f"exited with code {code} without recording an error"
        tail = self.log_tail.strip()
        return how + (f"; output tail:\n{tail}" if tail else "")

    def brief(self) -> str:
        if self.killed_by_launcher:
            return "killed by the launcher"
        return (self.error or {}).get("error", f"exit code {self.returncode}")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it; a race with another process
    grabbing it in between is possible but rare)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _rank_env(rank: int, world_size: int, port: int) -> dict[str, str]:
    """This process's environment, dabench first on PYTHONPATH (:func:`child_env`), and the rank's identity."""
    return child_env(
        None,
        {
            "RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world_size),
            "GROUP_RANK": "0",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "DABENCH_LAUNCHER_PID": str(os.getpid()),
        },
    )


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _root_cause(exits: list[RankExit]) -> RankExit:
    """The rank that failed first: one that died without an error record (signal, os._exit),
    else the earliest error record, else the lowest failed rank."""
    failed = [e for e in exits if not e.killed_by_launcher and e.returncode not in (0, None)]
    silent = [e for e in failed if e.error is None]
    if silent:
        return silent[0]
    if failed:
        return min(failed, key=lambda e: e.error.get("time", float("inf")) if e.error else float("inf"))
    return exits[0]


def launch(
    target: str,
    payload: dict[str, Any],
    world_size: int,
    timeout_s: float,
    *,
    init_method: str | None = None,
) -> list[dict[str, Any]]:
    """Run ``target`` ("module:function", called as ``function(payload, rank_env)``) on
    ``world_size`` ranks and return their results in rank order. Raises :class:`RankFailure`."""
    with tempfile.TemporaryDirectory(prefix="dabench-ranks-") as tmp:
        folder = Path(tmp)
        spec = {
            "target": target,
            "payload": payload,
            "result_dir": tmp,
            "timeout_s": timeout_s,
            "init_method": init_method or "env://",
        }
        spec_path = folder / "spec.json"
        spec_path.write_text(json.dumps(spec))
        port = free_port()
        procs: list[supervisor.Child] = []
        logs = [folder / f"log.{rank}.txt" for rank in range(world_size)]
        command = [sys.executable, "-m", "dabench.distributed.worker", str(spec_path)]
        try:
            for rank in range(world_size):
                procs.append(supervisor.start(command, logs[rank], env=_rank_env(rank, world_size, port)))
            failure = supervisor.wait_all(procs, timeout_s, GRACE_S)
        finally:
            killed = {rank for rank, proc in enumerate(procs) if supervisor.kill_group(proc)}  # still running
        exits = [
            RankExit(
                rank,
                proc.proc.returncode,
                _read_json(folder / f"error.{rank}.json"),
                tail(logs[rank], LOG_TAIL_CHARS),
                killed_by_launcher=rank in killed,
            )
            for rank, proc in enumerate(procs)
        ]
        if failure == "timeout":
            hung = sorted(killed)
            detail = "\n".join(f"rank {e.rank}: {e.describe()}" for e in exits if e.rank in hung)
            raise RankFailure(
                f"rank(s) {hung} of {world_size} still running after parallel.timeout_s={timeout_s:g} s "
                f"(hung?); all ranks were killed.\n{detail}",
                hung[0] if hung else None,
            )
        if failure == "failed":
            root = _root_cause(exits)
            others = "; ".join(f"rank {e.rank}: {e.brief()}" for e in exits if e.rank != root.rank)

            raise RankFailure(
                f"rank {root.rank} of {world_size} failed: {root.describe()}\n(other ranks: {others})", root.rank
            )
        results = [_read_json(folder / f"result.{rank}.json") for rank in range(world_size)]
        if None in results:
            rank = results.index(None)
            raise RankFailure(
                f"rank {rank} of {world_size} exited cleanly but wrote no result; "
                f"output tail:\n{tail(logs[rank], LOG_TAIL_CHARS)}",
                rank,
            )
        return results
