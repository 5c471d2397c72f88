"""``python -m dabench.cli.fit`` (the same as ``python -m dabench fit``)."""

import sys

from dabench.cli.fit import main

sys.exit(main())
