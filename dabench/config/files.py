"""conf/ and sweeps/ files read as written (not composed), each parsed once per process; a missing
file is ``{}``. A run uses the composed config (:func:`dabench.config.compose.compose`)."""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

from dabench.config.paths import CONF_DIR, SWEEPS_DIR


def fresh_file(path: Path) -> dict[str, Any]:
    """``path`` parsed now, not cached (for a file this process may rewrite, e.g. by ``fit --write``)."""
    import yaml  # only where a file is read: the CLI's --help never is

    data = yaml.safe_load(Path(path).read_text()) if Path(path).is_file() else None
    return data if isinstance(data, dict) else {}


def yaml_problem(path: Path) -> str:
    """Why ``path`` is no YAML mapping ("" when it is one)."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as error:
        return f"cannot be read ({type(error).__name__})"
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return f"not valid YAML{where} ({getattr(error, 'problem', None) or type(error).__name__})"
    return "" if data is None or isinstance(data, dict) else "not a YAML mapping"


_parsed = lru_cache(maxsize=None)(fresh_file)


def config_file(path: Path) -> dict[str, Any]:
    return copy.deepcopy(_parsed(Path(path)))


def group_file(group: str, option: str) -> dict[str, Any]:
    return config_file(CONF_DIR / group / f"{option}.yaml")


def sweep_file(name: str) -> dict[str, Any]:
    return config_file(SWEEPS_DIR / f"{name}.yaml")
