"""Disturbed measurements: the default measured run quiet, then beside 1 and 2 busy processes (each
pinned to one of the CPUs this process may use), ``--repeats`` times each, in this process
(``dabench.run([])``, unrecorded).

A disturbed run must not end ``ok`` with a wrong number: every run's status and samples/s are
printed, and the last line counts what matters:

    python benchmarks/interference.py [--repeats 5] [--busy 1,2]

Last line: quiet_spread=<(max - min) / median of the quiet runs' samples/s>
disturbed_runs=<n> disturbed_flagged=<n not ok> ok_off_by_more_than_15pct=<n ok runs, quiet or not,
whose samples/s is more than 15% from the quiet median>. Goal: ok_off_by_more_than_15pct=0 and the
quiet runs ok. Run it on an otherwise quiet machine: another load makes the "quiet" runs disturbed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

OFF_BY = 0.15  #: an ok run further than this from the quiet median counts as wrong


def busy_processes(n: int) -> list[subprocess.Popen]:
    """``n`` busy loops, the i-th pinned to the i-th CPU this process may use."""
    cpus = sorted(os.sched_getaffinity(0))
    procs = []
    for i in range(n):
        cpu = cpus[i % len(cpus)]
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", "while True: pass"], preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c})
            )
        )
    time.sleep(0.5)  # let them reach the scheduler before the run starts
    return procs


def one_run(label: str) -> tuple[str, float, str]:
    from dabench import run

    result = run([])
    rate = result.metrics.get("throughput.samples_per_s", float("nan"))
    eff = result.metrics.get("tier1.compute_efficiency")
    share = result.metrics.get("measure.cpu_share", float("nan"))
    wait = result.metrics.get("measure.cpu_wait", float("nan"))
    attempts = result.metrics.get("measure.attempts", float("nan"))
    effs = "n/a" if eff is None else f"{eff:.1%}"
    print(
        f"{label}: {result.status.value} {rate:.1f} samples/s, compute eff {effs}, cpu_share {share:.2f}, "
        f"cpu_wait {wait:.2f}, attempts {attempts:.0f}" + (f" | {result.reason[:160]}" if result.reason else ""),
        flush=True,
    )
    return result.status.value, rate, result.reason


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per condition (fewer: quicker, rougher)")
    parser.add_argument("--busy", default="1,2", help="busy process counts to run beside (comma list)")
    args = parser.parse_args(argv)
    os.environ.setdefault("DABENCH_PROGRESS", "off")
    quiet = [one_run(f"quiet {i + 1}") for i in range(args.repeats)]
    disturbed = []
    for n in [int(x) for x in args.busy.split(",") if x.strip()]:
        procs = busy_processes(n)
        try:
            disturbed += [one_run(f"beside {n} busy, {i + 1}") for i in range(args.repeats)]
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
    quiet_ok = [rate for status, rate, _ in quiet if status == "ok"]
    if not quiet_ok:  # the machine was not quiet: compare with every quiet run, said so
        print("no quiet run ended ok: this machine was busy; the reference is every quiet run's median")
    pool = quiet_ok or [rate for _, rate, _ in quiet]
    reference = statistics.median(pool)
    spread = (max(pool) - min(pool)) / reference
    off = sum(1 for status, rate, _ in quiet + disturbed if status == "ok" and abs(rate / reference - 1) > OFF_BY)
    flagged = sum(1 for status, _, _ in disturbed if status != "ok")
    print(f"quiet runs ok: {len(quiet_ok)} of {len(quiet)}; quiet median {reference:.1f} samples/s")
    print(
        f"quiet_spread={spread:.3f} disturbed_runs={len(disturbed)} disturbed_flagged={flagged} "
        f"ok_off_by_more_than_15pct={off}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
