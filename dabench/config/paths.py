"""Where the config folders are: the one place that finds conf/ and sweeps/.

In a source checkout (or an editable install) they are the repository's top-level folders; a
built wheel carries copies as package data under ``dabench/_data/`` (setup.py copies them).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def _data_root() -> Path:
    bundled = _PACKAGE / "_data"
    if (bundled / "conf" / "config.yaml").is_file():
        return bundled
    return _PACKAGE.parent


#: the Hydra config folder (groups model/, hardware/, parallel/, precision/, ...)
CONF_DIR: Path = _data_root() / "conf"
#: the shipped Optuna sweeps (the ``+sweeps=NAME`` group)
SWEEPS_DIR: Path = _data_root() / "sweeps"
#: True for an installed wheel (the configs are its bundled copies), False in a source checkout
#: or an editable install
BUNDLED: bool = CONF_DIR.parent == _PACKAGE / "_data"
#: the source checkout's root (docs/, scripts/, benchmarks/), or None for an installed wheel:
#: what only makes sense in a checkout (rewriting docs or shipped configs) refuses without it
CHECKOUT_ROOT: Path | None = None if BUNDLED else _PACKAGE.parent


def require_checkout(what: str) -> Path:
    """The checkout's root, or SystemExit with one line saying that ``what`` needs one."""
    if CHECKOUT_ROOT is None:
        raise SystemExit(
            f"dabench: {what} needs a source checkout of dabench (this one is an installed "
            f"wheel at {_PACKAGE}); run it from a clone with `pip install -e .`"
        )
    return CHECKOUT_ROOT
