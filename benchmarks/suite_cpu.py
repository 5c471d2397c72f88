"""Where a pytest run's CPU goes, by process: what to cut when CI nears its time limit.

Runs ``python -m pytest <args>`` (default: the slow suite as .ci/run runs it) with a
``sitecustomize`` on PYTHONPATH that makes every Python process of the tree append its own CPU
time (user + system, all threads), wall time, command line and whether it is a fork (the tests'
fork server, tests/forkserver.py, or multiprocessing) to a log when it exits. Prints the
tree's total CPU time (``getrusage`` of the waited-for children), the share the log accounts for,
the CPU by kind of process (``dabench <subcommand or task>``, pytest, xdist worker, mlflow server,
other) and the top processes. What the log misses: processes that end by SIGKILL or
``os._exit`` (killed workers, multiprocessing children, the commands the tests' fork server
forks: they skip the interpreter's teardown, and this log's exit function with it), non-Python programs (PostgreSQL,
Chromium, Ray's daemons), and daemons that outlive pytest. The tree's exit status is returned.

    python benchmarks/suite_cpu.py                              # CI=true pytest -q -m slow -n 2 --dist loadgroup
    python benchmarks/suite_cpu.py --top 40 -- -q -m "not slow" -n 2 --dist loadgroup
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["-q", "-m", "slow", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
HOOK = """import atexit, json, os, sys, time
_start, _forked = time.time(), False
def _child():
    global _start, _forked
    _start, _forked = time.time(), True
os.register_at_fork(after_in_child=_child)
def _log():
    try:
        t = os.times()
        row = {"cpu_s": t.user + t.system, "wall_s": time.time() - _start, "argv": sys.argv[:40], "forked": _forked}
        line = json.dumps(row)
        with open(os.environ["DABENCH_CPU_LOG"], "a") as out:
            out.write(line + "\\n")
    except Exception:
        pass
atexit.register(_log)
"""


def kind(argv: list[str]) -> str:
    """A short label for a process's command line (what the CPU table groups by)."""
    text = " ".join(argv)
    if argv and argv[0].endswith("dabench/__main__.py") or (argv and argv[0] == "dabench"):
        first = next((a for a in argv[1:] if not a.startswith("-")), "")
        return f"dabench {first}" if first and "=" not in first else "dabench <task>"
    if "pytest" in text and "__main__" in text:
        return "pytest (the run itself or a child pytest)"
    if argv[:1] == ["-c"]:
        return "pytest-xdist worker"
    if "mlflow" in text or "uvicorn" in text:
        return "mlflow server"
    return Path(argv[0]).name if argv else "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="how many single processes to list (default 25)")
    parser.add_argument("pytest_args", nargs="*", help="pytest's arguments, after --; default: the slow suite")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dabench-cpu-") as folder:
        (Path(folder) / "sitecustomize.py").write_text(HOOK)
        log = Path(folder) / "cpu.jsonl"
        env = {**os.environ, "DABENCH_CPU_LOG": str(log), "CI": os.environ.get("CI", "true")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)
        start = time.monotonic()
        code = subprocess.call([sys.executable, "-m", "pytest", *(args.pytest_args or DEFAULT_ARGS)], cwd=ROOT, env=env)
        wall = time.monotonic() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    total = usage.ru_utime + usage.ru_stime
    logged = sum(r["cpu_s"] for r in rows)
    print(f"\nwall {wall:.0f} s, CPU {total:.0f} s ({total / max(wall, 1e-9):.2f} cores busy on average)")
    share = 100 * logged / max(total, 1e-9)
    print(f"logged by {len(rows)} Python processes at exit: {logged:.0f} CPU-s ({share:.0f}%)")
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        groups[kind(row["argv"]) + (" (forked)" if row.get("forked") else "")].append(row["cpu_s"])
    print(f"\n{'CPU-s':>8} {'procs':>6} {'mean':>6}  kind")
    for name, cpus in sorted(groups.items(), key=lambda item: -sum(item[1])):
        print(f"{sum(cpus):8.1f} {len(cpus):6d} {sum(cpus) / len(cpus):6.2f}  {name}")
    print(f"\n{'CPU-s':>8} {'wall-s':>7}  process (top {args.top})")
    for row in sorted(rows, key=lambda r: -r["cpu_s"])[: args.top]:
        print(f"{row['cpu_s']:8.1f} {row['wall_s']:7.1f}  {' '.join(row['argv'])[:160]}")
    print(f"suite_cpu_s={total:.1f} suite_wall_s={wall:.1f} logged_cpu_s={logged:.1f}")
    return code


if __name__ == "__main__":
    sys.exit(main())
