"""A finding's setting as a config mapping (the shipped conf/ with the setting's changes), for the
one predictor (:func:`dabench.predictor.predict`: CapacityError when the model refuses it).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from dabench.config.files import group_file
from dabench.fit.evaluate import point_config
from dabench.fit.points import Point
from dabench.predictor import predict


def config(
    platform: str,
    model: str = "gpt2_small",
    precision: str = "mixed",
    parallel: str = "none",
    batch: int = 4,
    grad_accum: int = 1,
    options: dict[str, Any] | None = None,
    model_over: dict[str, Any] | None = None,
    hw: dict[str, Any] | None = None,
    **parallel_over: Any,
) -> dict[str, Any]:
    """The run config mapping: conf/ groups, then these changes (tests/perfmodel/helpers.run_config uses it)."""
    point = Point(
        "finding", platform, model, (f"parallel={parallel}",), batch, grad_accum, precision,
        "", "", "", 0.0, "M", 0.0, "rel", "check", "", "",
    )  # fmt: skip
    cfg = point_config(point)
    cfg["hardware"]["options"].update(options or {})
    cfg["hardware"].update(hw or {})
    cfg["model"].update(model_over or {})
    cfg["parallel"].update(parallel_over)
    return cfg


def throughput(cfg: dict[str, Any]) -> float:
    return float(predict(cfg).metrics["throughput.samples_per_s"])


@lru_cache(maxsize=1)
def ipu_sweep_placements() -> tuple[str, ...]:
    """The layers-per-IPU placements of the default IPU sweep (conf/default_sweep/ipu_pp.yaml)."""
    data = group_file("default_sweep", "ipu_pp")
    return tuple(re.findall(r'"([^"]+)"', data["hydra"]["sweeper"]["params"]["parallel.placement"]))
