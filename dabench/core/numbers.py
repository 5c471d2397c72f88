"""The one guard for numbers read back (a tracking store's metrics, a cache, a constant set, an
ingested artifact): :func:`bad_number` says what is wrong with a value, '' when nothing is. A good
number is real (not a bool or text), finite, of magnitude below :data:`LIMIT` (MLflow stores +-inf
as +-1.8e308) and in its field's range (:data:`RANGES`, by the longest matching name prefix).
A reader skips a record with a bad number and counts it; it never uses the number.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

LIMIT = 1e30  #: no figure dabench records comes near this; stored infinities (1.8e308) are beyond it

#: (low, high, low excluded) of each metric family; a name matches its longest prefix here
RANGES: dict[str, tuple[float, float, bool]] = {
    "throughput.": (0.0, LIMIT, True),
    "step_time.": (0.0, LIMIT, True),
    "perf.peak_tflops": (0.0, LIMIT, True),
    "perf.achieved_tflops": (0.0, LIMIT, False),
    "roofline.ridge_intensity": (0.0, LIMIT, True),
    "class_time.": (0.0, LIMIT, False),
    "memory.": (0.0, LIMIT, False),
    "tier2.comm_fraction": (0.0, 1.0, False),
    "tier2.bubble_fraction": (0.0, 1.0, False),
}


def field_range(name: str) -> tuple[float, float, bool]:
    """The range of field ``name``: its longest prefix in :data:`RANGES`, else any finite value."""
    prefixes = [p for p in RANGES if name.startswith(p)]
    return RANGES[max(prefixes, key=len)] if prefixes else (-LIMIT, LIMIT, False)


def bad_number(name: str, value: Any) -> str:
    """What is wrong with ``value`` as field ``name`` (``'name=value: why'``), '' if nothing."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return f"{name}={str(value)[:40]!r}: not a number"
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return f"{name}={str(value)[:40]!r}: not a number"
    low, high, open_low = field_range(name)
    if not math.isfinite(number) or abs(number) >= LIMIT:
        return f"{name}={number:g}: not finite (or as large as a stored infinity)"
    if number < low or number > high or (open_low and number == low):
        return f"{name}={number:g}: out of range {'(' if open_low else '['}{low:g}, {high:g}]"
    return ""


def bad_metrics(metrics: Mapping[str, Any]) -> str:
    """The first bad number of ``metrics`` (None values are absent, not bad), '' if none."""
    whys = (bad_number(str(name), value) for name, value in metrics.items() if value is not None)
    return next((why for why in whys if why), "")
