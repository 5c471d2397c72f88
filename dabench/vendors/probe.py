"""``python -m dabench.vendors.probe MODULE [--ipus N]``: is a vendor SDK usable here?

Prints one JSON line ``{"ok", "reason", "python", "version"}``. Finding the module uses
``importlib.util.find_spec`` (nothing is imported); ``--ipus N`` additionally imports poptorch and
asks ``poptorch.ipuHardwareIsAvailable(N)``. Standard library only (runs in vendor venvs).
"""

from __future__ import annotations

import importlib.util
import json
import sys


def version_of(distributions) -> str:
    from importlib import metadata  # Python 3.8+, as every runner interpreter (dabench/vendors/child.py)

    for name in distributions:
        try:
            return metadata.version(name)
        except Exception:
            continue
    return "unknown"


def probe(module: str, ipus: int = 0) -> dict:
    result = {"ok": False, "reason": "", "python": sys.executable, "version": ""}
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package
        found = False
    if not found:
        result["reason"] = "%s is not importable" % module
        return result
    result["version"] = version_of([module.replace(".", "-"), module.split(".")[0]])
    if ipus:
        try:
            import poptorch

            if not poptorch.ipuHardwareIsAvailable(ipus):
                result["reason"] = (
                    "PopTorch is installed but %d IPU(s) are not available (is the machine attached, "
                    "or set hardware.options.runner_ipu_model=true for the IPU Model simulator)" % ipus
                )
                return result
        except Exception as error:  # pragma: no cover - depends on the SDK
            result["reason"] = "importing poptorch failed: %s: %s" % (type(error).__name__, error)
            return result
    result["ok"] = True
    return result


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ipus = int(argv[argv.index("--ipus") + 1]) if "--ipus" in argv else 0
    print(json.dumps(probe(argv[0], ipus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
