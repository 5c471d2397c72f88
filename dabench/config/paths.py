"""Where conf/ and sweeps/ are: the repository's top-level folders in a checkout, copies under
``dabench/_data/`` in a built wheel."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

_PACKAGE = Path(__file__).resolve().parents[1]
#: True for an installed wheel (the configs are its bundled copies)
BUNDLED: bool = (_PACKAGE / "_data" / "conf" / "config.yaml").is_file()
#: the Hydra config folder (groups model/, hardware/, parallel/, precision/, ...)
CONF_DIR: Path = (_PACKAGE / "_data" if BUNDLED else _PACKAGE.parent) / "conf"
#: the shipped Optuna sweeps (the ``+sweeps=NAME`` group)
SWEEPS_DIR: Path = CONF_DIR.parent / "sweeps"
#: the source checkout's root, or None for an installed wheel
CHECKOUT_ROOT: Path | None = None if BUNDLED else _PACKAGE.parent


def searchpath_dirs(argv: Sequence[str]) -> list[Path]:
    """The folders of ``hydra.searchpath=[...]`` on a command line (``pkg://`` entries are not)."""
    lists = [a.partition("=")[2] for a in argv if a.partition("=")[0].lstrip("+") == "hydra.searchpath"]
    items = [item.strip().strip("'\"") for value in lists for item in value.strip().strip("[]").split(",")]
    return [Path(item.removeprefix("file://")) for item in items if item and not item.startswith("pkg://")]


def sweep_folders(argv: Sequence[str] = (), launch: Path | None = None) -> list[Path]:
    """Where ``+sweeps=<name>`` is looked up, in Hydra's order: ``sweeps/`` of each searchpath
    folder of ``argv``, of the launch directory, then :data:`SWEEPS_DIR`."""
    folders = [*(d / "sweeps" for d in searchpath_dirs(argv)), Path(launch or os.getcwd()) / "sweeps", SWEEPS_DIR]
    return [f for i, f in enumerate(folders) if f.resolve() not in {g.resolve() for g in folders[:i]}]


def require_checkout(what: str) -> Path:
    """The checkout's root, or SystemExit with one line saying that ``what`` needs one."""
    if CHECKOUT_ROOT is None:
        raise SystemExit(
            f"dabench: {what} needs a source checkout of dabench (this one is an installed "
            f"wheel at {_PACKAGE}); run it from a clone with `pip install -e .`"
        )
    return CHECKOUT_ROOT
