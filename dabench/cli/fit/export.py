"""``dabench fit --export NAME|FILE``: a constant set printed as JSON, for another team's
``hardware.constants=path/to/file`` (docs/fitting.md, "The workflow in five commands").
"""

from __future__ import annotations

import json
import sys

from dabench.perfmodel import constants


def run_export(name: str) -> int:
    try:
        data = constants.resolve(name)
    except (OSError, ValueError) as error:
        print(f"dabench fit: {error}", file=sys.stderr)
        return 2
    print(json.dumps(data, indent=1))
    return 0
