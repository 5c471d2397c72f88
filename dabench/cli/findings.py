"""``dabench findings``: the paper's headline findings, each with the status the models earn now.

Prints the table (``--write`` rewrites it in docs/perfmodel.md, ``--check`` exits 1 when it is
stale), then ``findings predicted=<n> fitted=<n> not_reproduced=<n>``; exit 0 whatever the counts.
Details: docs/perfmodel.md, "The paper's findings".
"""

from __future__ import annotations

from dabench.cli.frame import command, flag
from dabench.findings import FITTED, NOT_REPRODUCED, PREDICTED, table


@command(
    "findings",
    __doc__.splitlines()[0],
    {
        "--write": flag("rewrite the table in docs/perfmodel.md"),
        "--check": flag("write nothing; exit 1 when docs/perfmodel.md's table is stale"),
    },
    writes={"source_tree": lambda args: args.write},
    exclusive=("--write", "--check"),
)
def main(args) -> int:
    statuses = table.rows()
    block = table.markdown(statuses)
    code = 0
    if args.write:
        print("docs/perfmodel.md: findings table " + ("updated" if table.write(block=block) else "already current"))
    elif args.check:
        stale = table.doc_block() != block
        print(
            "docs/perfmodel.md: the findings table is "
            + ("stale: run dabench findings --write" if stale else "current")
        )
        code = int(stale)
    else:
        print(block)
    count = {kind: sum(row.status == kind for row in statuses) for kind in (PREDICTED, FITTED, NOT_REPRODUCED)}
    print("findings " + " ".join(f"{kind.replace(' ', '_')}={n}" for kind, n in count.items()))
    return code
