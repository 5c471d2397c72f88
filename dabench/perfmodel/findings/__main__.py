"""``python -m dabench.perfmodel.findings [--write | --check]``: print, write or check the findings
table in docs/perfmodel.md (exit 1 from ``--check`` when the table is stale)."""

from __future__ import annotations

import argparse
import sys

from dabench.perfmodel.findings import table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dabench.perfmodel.findings", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the table in docs/perfmodel.md")
    group.add_argument("--check", action="store_true", help="exit 1 when docs/perfmodel.md's table is stale")
    args = parser.parse_args(argv)
    block = table.markdown()
    if args.write:
        print(f"{table.DOC} " + ("updated" if table.write(block=block) else "already current"))
        return 0
    if args.check:
        if table.doc_block() != block:
            print(f"{table.DOC}: the findings table is stale: run python -m dabench.perfmodel.findings --write")
            return 1
        print(f"{table.DOC}: the findings table is current")
        return 0
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
