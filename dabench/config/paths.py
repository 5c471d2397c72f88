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
