"""Which platform and which machine a run belongs to, and the points grouped by both.

Contract: :func:`platform_of` and :func:`host_key` read a run's tags and params only (a measured
run's ``dabench.arch`` / ``dabench.host_key`` tags; an ingested artifact's format for runs recorded
before ``dabench ingest`` tagged them); points.group_points keys points by them, so machines of
one platform are never fitted together. Details: docs/fitting.md, "What becomes a
point".
"""

from __future__ import annotations

from typing import Any, Mapping

#: an ingested vendor artifact's format -> its platform
INGEST_ARCH = {
    "popvision_json": "ipu",
    "sambaflow_compile": "rdu",
    "cerebras_compile_report": "wse2",
    "cerebras_appliance_run": "wse2",
}


def platform_of(tags: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The run's platform: its ``dabench.arch`` tag, else its ingested format's platform ("" if neither)."""
    arch = tags.get("dabench.arch") or INGEST_ARCH.get(str(params.get("import.format")), "")
    return "" if arch == "None" else str(arch)


def host_key(tags: Mapping[str, Any], params: Mapping[str, Any], arch: str) -> str:
    """The machine a run ran on: its ``dabench.host_key`` tag (CPU model, GPU name, vendor system),
    else ``<arch>:<format>`` for an ingested artifact, else ``host:<host name>`` (older runs)."""
    fmt = params.get("import.format")
    return tags.get("dabench.host_key") or (f"{arch}:{fmt}" if fmt else f"host:{tags.get('dabench.host', '?')}")
