"""Measured backends: ``hardware.backend`` name -> implementing class, as its platform record
(dabench/platforms/<family>/) declares it; imported only when used, so that ``--help`` and
predict-mode runs never import torch or a vendor SDK they do not need.
"""

from __future__ import annotations

from dabench.backends.base import Availability, Backend, TimedWindowCallback
from dabench.core.platforms import backend_class as get_backend

__all__ = ["Availability", "Backend", "TimedWindowCallback", "get_backend"]
