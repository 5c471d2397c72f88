"""All-reduce and send/recv bus bandwidth on gloo over loopback, 4 KB to 64 MB, 2 and 4 ranks.

    python benchmarks/collectives.py [--ranks 2 4] [--threads 1]

Prints a table (time per call of the slowest rank, algorithm and bus bandwidth, NCCL-tests
convention; see dabench/distributed/busbw.py for the method) and, last, the line
``allreduce_busbw_GBps_64MB_2ranks=<N>``. Ranks are started by dabench's launcher (one process
per rank, 1 torch thread each by default); on a machine with fewer cores than ranks they share
cores, which the figures then include.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dabench.distributed.busbw import summarize  # noqa: E402
from dabench.distributed.launcher import launch  # noqa: E402

SIZES = [4 * 2**10 * 4**i for i in range(8)]  # 4 KiB, 16 KiB, ..., 64 MiB


def _size(nbytes: int) -> str:
    return f"{nbytes // 2**20} MB" if nbytes >= 2**20 else f"{nbytes // 2**10} KB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    rows = []
    for ranks in args.ranks:
        per_rank = launch(
            "dabench.distributed.busbw:measure_collectives",
            {"sizes": SIZES, "threads": args.threads},
            ranks,
            args.timeout,
        )
        rows.extend(summarize(per_rank, ranks))
    print(f"gloo over 127.0.0.1, {os.cpu_count()} CPUs, torch threads per rank={args.threads}")
    print(f"{'op':<10}{'ranks':>6}{'size':>8}{'time_us':>12}{'algbw_GBps':>12}{'busbw_GBps':>12}")
    for row in rows:
        print(
            f"{row['op']:<10}{row['ranks']:>6}{_size(row['bytes']):>8}{row['time_us']:>12.1f}"
            f"{row['algbw_GBps']:>12.3f}{row['busbw_GBps']:>12.3f}"
        )
    target = [r for r in rows if r["op"] == "allreduce" and r["ranks"] == 2 and r["bytes"] == 64 * 2**20]
    value = f"{target[0]['busbw_GBps']:.3f}" if target else "nan"
    print(f"allreduce_busbw_GBps_64MB_2ranks={value}")


if __name__ == "__main__":
    main()
