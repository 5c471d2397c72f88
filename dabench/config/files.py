"""conf/ and sweeps/ files read as written (not composed), each parsed once per process; a missing
file is ``{}``. Sweep files, the shipped and the user's, are read and checked here only
(:func:`read_sweep`: Hydra's ``sweeps`` group, advise's spaces, the ``+sweeps=`` check). A run
uses the composed config (:func:`dabench.config.compose.compose`)."""

from __future__ import annotations

import copy
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from dabench.config.paths import SWEEPS_DIR
from dabench.core.readers import DamagedFile, is_number, mapping, read_text, read_yaml, safe_yaml


def fresh_file(path: Path) -> dict[str, Any]:
    """``path`` parsed now, not cached (for a file this process may rewrite, e.g. by ``fit --write``)."""
    data = safe_yaml(Path(path).read_text()) if Path(path).is_file() else None
    return data if isinstance(data, dict) else {}


def read_sweep(path: Path | str) -> tuple[str, dict[str, Any]]:
    """A sweep file's text and document (shared: copy before changing it), parsed once per file
    version: a YAML mapping without aliases, ``hydra.sweeper.n_trials``/``n_jobs`` integers >= 1,
    each searched dimension well formed (:func:`dimension_problem`). DamagedFile names the file,
    the field and the value; a missing file is FileNotFoundError."""
    info = os.stat(path)
    return _read_sweep(str(path), info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=64)
def _read_sweep(path: str, mtime_ns: int, size: int) -> tuple[str, dict[str, Any]]:
    text = read_text(path, 2**20)
    document = read_yaml(path, text)
    if document is None:
        return text, {}
    if not isinstance(document, dict):
        raise DamagedFile(path, "not a YAML mapping")
    data = mapping(path, document)
    sweeper = mapping(path, mapping(path, data.get("hydra") or {}, "hydra").get("sweeper") or {}, "hydra.sweeper")
    for name in ("n_trials", "n_jobs"):
        value = sweeper.get(name)
        if isinstance(value, str) and value.startswith("${"):
            continue
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise DamagedFile(path, f"hydra.sweeper.{name}={str(value)[:40]!r}: must be an integer >= 1")
    for key, value in mapping(path, sweeper.get("params") or {}, "hydra.sweeper.params").items():
        problem = dimension_problem(key, value)
        if problem:
            raise DamagedFile(path, f"hydra.sweeper.params.{key}={str(value)[:60]!r}: {problem}")
    return text, data


def dimension_problem(key: str, value: Any) -> str:
    """What is wrong with the searched dimension ``key: value`` ("" when nothing): Hydra's grammar,
    an empty choice or range, an interval whose bounds are no numbers or whose low > high."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep

    if not isinstance(value, str):
        return ""  # a fixed value
    try:
        override = OverridesParser.create().parse_override(f"{key}={value}")
    except Exception as error:
        return f"not a value, choice(...), range(...) or interval(...) ({str(error).splitlines()[0][:120]})"
    sweep = override.value() if override.is_sweep_override() else None
    if isinstance(sweep, ChoiceSweep) and not sweep.list:
        return "an empty choice: list at least one value"
    if isinstance(sweep, RangeSweep) and (not sweep.step or (sweep.stop - sweep.start) / sweep.step <= 0):
        return "an empty range: range(start, stop[, step]) excludes stop and needs start < stop for step > 0"
    if isinstance(sweep, IntervalSweep):
        if not all(is_number(v) for v in (sweep.start, sweep.end)):
            return "interval(low, high) takes two numbers"
        if sweep.start > sweep.end:
            return f"low {sweep.start:g} > high {sweep.end:g}: write interval(low, high) with low <= high"
    return ""


def with_values(path: Path, values: Mapping[str, str]) -> str:
    """The text of YAML file ``path`` with the scalar at each dotted key of ``values``
    (``options.pcu_efficiency``) replaced by its YAML text, where the parser found it: comments,
    order and layout stay. KeyError naming a key that is no scalar of the file."""
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    root, edits = yaml.compose(text), []
    for dotted, new in values.items():
        node = root
        for part in dotted.split("."):  # None once a part is missing
            node = (
                next((v for k, v in node.value if k.value == part), None)
                if isinstance(node, yaml.MappingNode)
                else None
            )
        if not isinstance(node, yaml.ScalarNode):
            raise KeyError(f"{Path(path).name}: no value {dotted}")
        edits.append((node.start_mark.index, node.end_mark.index, str(new)))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


_parsed = lru_cache(maxsize=None)(fresh_file)


def config_file(path: Path) -> dict[str, Any]:
    return copy.deepcopy(_parsed(Path(path)))


def hardware_preset(path: Path) -> dict[str, Any]:
    """A hardware YAML over the hardware files its ``defaults`` name, as a generation preset
    (``defaults: [<family>, _self_]``) inherits them: a later file's keys replace an earlier one's,
    ``options`` are merged."""
    data = config_file(path)
    parents = [path.parent / f"{e}.yaml" for e in data.get("defaults") or [] if isinstance(e, str) and e != "_self_"]
    chain = [*(hardware_preset(parent) for parent in parents if parent.is_file()), data]
    merged = {key: value for layer in chain for key, value in layer.items()}
    return {**merged, "options": {k: v for layer in chain for k, v in (layer.get("options") or {}).items()}}


def sweep_file(name: str) -> dict[str, Any]:
    """The shipped sweep ``name`` (:func:`read_sweep`); {} when there is none."""
    try:
        return copy.deepcopy(read_sweep(SWEEPS_DIR / f"{name}.yaml")[1])
    except FileNotFoundError:
        return {}
