"""docs/perfmodel.md's generated blocks: one per platform (the points table), the out-of-sample
block (from the published constant set) and the 'uncertain' block, rewritten between markers.

Contract: :func:`blocks` is block name -> text; :func:`update_doc` replaces each marked block in
the file and says whether it changed (markers missing: SystemExit naming them).
"""

from __future__ import annotations

from pathlib import Path

from dabench.cli.fit.cv_text import CV_BLOCK, cv_markdown
from dabench.cli.fit.tables import BEGIN, DOC, END, markdown
from dabench.cli.fit.uncertain import UNCERTAIN_BLOCK, uncertain_markdown
from dabench.perfmodel.fit import constant_set
from dabench.perfmodel.fit.points import Point
from dabench.runtime.sinks import write_text


def blocks(results: dict[str, list[tuple[Point, float]]]) -> dict[str, str]:
    """Every generated block: each platform's table, then the out-of-sample and 'uncertain' blocks."""

    out = {arch: markdown(arch, rows) for arch, rows in results.items()}
    if constant_set.load():
        out[CV_BLOCK] = cv_markdown(dict(constant_set.load()))
    out[UNCERTAIN_BLOCK] = uncertain_markdown()
    return out


def update_doc(blocks: dict[str, str], doc: Path = DOC) -> bool:
    """Replace each arch's marked block in docs/perfmodel.md; True when the file changed."""
    text = doc.read_text()
    new = text
    for arch, block in blocks.items():
        begin, end = BEGIN.format(arch=arch), END.format(arch=arch)
        if begin not in new or end not in new:
            raise SystemExit(f"{doc}: no markers {begin} ... {end}; add them where the table belongs")
        head, rest = new.split(begin, 1)
        _, tail = rest.split(end, 1)
        new = head + block + tail
    if new != text:
        write_text("source_tree", doc, new)
    return new != text
