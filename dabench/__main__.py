"""``python -m dabench [overrides] [-m]`` or ``python -m dabench <command>`` (dabench/cli/main.py)."""

import sys

from dabench.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
