"""``dabench sync [--tracking-uri URI] [--outbox DIR] [--list]``: replay the runs kept in the
outbox while the tracking server could not be reached, each exactly once
(dabench/tracking/outbox.py); ``--list`` shows what waits and changes nothing.

Exit 0 when the outbox is empty afterwards (``--list``: when no journal is damaged), 1 when
runs are left (the server is still unreachable: run it again later) or a journal is damaged
(kept and named), 2 for bad arguments.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import TEXT
from dabench.core.status import ConfigError
from dabench.tracking.outbox import OUTBOX_ENV, describe, outbox_dir, replay, scan
from dabench.tracking.store import tracking_uri


@command(
    "sync",
    __doc__.split("\n\n")[0],
    {
        "--tracking-uri": arg(TEXT, "the store to replay into (default: the one dabench would use)"),
        "--outbox": arg(TEXT, "the outbox folder (default: $DABENCH_OUTBOX or ./mlruns-outbox)"),
        "--list": flag("list the runs that wait in the outbox (and damaged journals); replay nothing"),
    },
    writes={sink: (lambda args: not args.list) for sink in ("store", "artifacts", "outbox")},
)
def main(args) -> int:
    if args.outbox is not None:
        if Path(args.outbox).exists() and not Path(args.outbox).is_dir():
            raise ConfigError("--outbox", args.outbox, "is a file; give the outbox folder")
        os.environ[OUTBOX_ENV] = str(args.outbox)
    folder = outbox_dir()
    journals, damaged = scan(folder)
    if args.list:
        for journal in journals:
            print(describe(journal))
        for line in damaged:
            print(f"dabench sync: {line}", file=sys.stderr)
        print(f"dabench sync: {len(journals)} runs wait in {folder}, {len(damaged)} damaged journals")
        return 1 if damaged else 0
    if not journals and not damaged:
        print(f"dabench sync: nothing to replay in {folder}")
        return 0
    report = replay(tracking_uri(args.tracking_uri), folder)
    if report is None:
        print(f"dabench sync: another dabench sync still replays {folder}; try again when it ends", file=sys.stderr)
        return 1
    print(report.line(folder))
    return 0 if report.left == 0 else 1
