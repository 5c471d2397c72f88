"""What a dabench run is called and tagged in MLflow, and the store's limits on names and values.

A name, key or value the user chose that the store would refuse is refused before any work
(:func:`check_names`); what dabench generated is shortened and named in ``dabench.truncated``.
Limits: docs/reliability.md, "Sinks and the fault matrix".
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Mapping

from dabench.config.build import flatten
from dabench.config.sections import RunConfig
from dabench.core.platforms import device_name
from dabench.core.result import RunResult
from dabench.core.status import ConfigError

# MLflow 3's limits (mlflow/utils/validation.py; tests/reliability/test_names.py compares them)
MAX_KEY_CHARS = 250  #: MAX_ENTITY_KEY_LENGTH: param, metric and tag keys
MAX_PARAM_CHARS = 6000  #: MAX_PARAM_VAL_LENGTH
MAX_TAG_CHARS = 8000  #: MAX_TAG_VAL_LENGTH
MAX_RUN_NAME_CHARS = 250  #: the runs table's ``name`` column, String(250) (mlflow/store/tracking/dbmodels)
MAX_EXPERIMENT_CHARS = 500  #: MAX_EXPERIMENT_NAME_LENGTH
#: validate_param_and_metric_name (POSIX): what a key may hold
KEY_PATTERN = re.compile(r"^[/\w.\- :]*$")
KEY_RULE = (
    f"a key of at most {MAX_KEY_CHARS} characters: letters, digits, _ - . / : and spaces, "
    "not a path that normalises to another name (no leading /, no .., no //)"
)
TRUNCATED_TAG = "dabench.truncated"  #: which generated names or values were shortened, and from what length
SHOWN_CHARS = 60  #: a refused value is shown this long at most


def shown(value: Any) -> str:
    """A value for a one-line message: its repr, at most :data:`SHOWN_CHARS` characters."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 20]}...({len(str(value))} chars)"


def key_problem(key: str) -> str | None:
    """Why the store would refuse ``key`` as a param, metric or tag key (None: it would not)."""
    if not key:
        return "an empty key"
    if len(key) > MAX_KEY_CHARS:
        return f"{len(key)} characters"
    if not KEY_PATTERN.match(key):
        return "a character outside the allowed set"
    norm = posixpath.normpath(key)
    if norm != key or norm == "." or norm.startswith("..") or norm.startswith("/"):
        return "a path that normalises to another name"
    return None


class StoreLimitError(ConfigError):
    """A name, key or value the user chose that the tracking store would refuse."""


def _refused(field: str, value: Any, valid: str) -> ConfigError:
    error = StoreLimitError(field, value, valid)
    error.args = (f"invalid config: {field}={shown(value)}: {valid}",)
    return error


def _check_pairs(prefix: str, pairs: Mapping[str, Any], limit: int, valid: str) -> ConfigError | None:
    """Each key of ``pairs`` a valid key, each value at most ``limit`` characters (else ``valid``)."""
    for key, value in pairs.items():
        field = f"{prefix}{key}"
        if key_problem(str(key)):
            return _refused(field, str(key), f"{KEY_RULE} ({key_problem(str(key))})")
        if len(str(value)) > limit:
            return _refused(field, value, valid)
    return None


def check_names(container: Mapping[str, Any]) -> ConfigError | None:
    """The first user-chosen name, key or value of a composed config the store would refuse, as a
    ConfigError; None when all fit or tracking is off. ``tracking.experiment``: a non-empty name
    the store keeps whole; ``tracking.run_name`` (null = generated): kept whole; ``tracking.tags``
    and the flattened config (the run's params): valid keys, values within the store's limits."""
    tracking = container.get("tracking") or {}
    if not tracking.get("enabled", True):
        return None
    experiment, name = tracking.get("experiment") or "dabench", tracking.get("run_name")
    if not isinstance(experiment, str) or not experiment.strip() or len(experiment) > MAX_EXPERIMENT_CHARS:
        return _refused(
            "tracking.experiment", experiment, f"a non-empty name of at most {MAX_EXPERIMENT_CHARS} characters"
        )
    if name is not None and (not isinstance(name, str) or len(name) > MAX_RUN_NAME_CHARS):
        return _refused("tracking.run_name", name, f"a name of at most {MAX_RUN_NAME_CHARS} characters, or null")
    return _check_pairs(
        "tracking.tags.",
        tracking.get("tags") or {},
        MAX_TAG_CHARS,
        f"a tag value of at most {MAX_TAG_CHARS} characters",
    ) or _check_pairs(
        "", flatten(container), MAX_PARAM_CHARS, f"a value of at most {MAX_PARAM_CHARS} characters (an MLflow param)"
    )


def fit_value(key: str, value: str, limit: int) -> tuple[str, str | None]:
    """A generated value cut to ``limit`` characters: (value, note or None when it fitted)."""
    if len(value) <= limit:
        return value, None
    return value[: limit - 3] + "...", f"{key} ({len(value)} chars -> {limit})"


def truncation_note(notes: list[str]) -> dict[str, str]:
    """The :data:`TRUNCATED_TAG` tag for ``notes`` (empty when nothing was shortened)."""
    notes = [n for n in notes if n]
    return {TRUNCATED_TAG: "; ".join(notes)[:MAX_TAG_CHARS]} if notes else {}


def run_name(container: dict[str, Any]) -> str:
    """A short, distinguishing name: model, layers, hidden size, hardware (and its mode knob),
    parallel layout, precision, micro-batch."""
    model = container.get("model") or {}
    hardware = container.get("hardware") or {}
    parallel = container.get("parallel") or {}
    options = hardware.get("options") or {}
    knob = options.get("compile_mode") or options.get("execution_mode")
    strategy = parallel.get("strategy", "none")
    layout = ""
    if strategy == "pp" and parallel.get("layers_per_stage"):
        layout = " pp[" + ",".join(str(n) for n in parallel["layers_per_stage"]) + "]"
    elif strategy != "none":
        layout = f" {strategy}{parallel.get('degree')}"
    if (parallel.get("replicas") or 1) > 1:
        layout += f"x{parallel['replicas']}"
    precision = (container.get("precision") or {}).get("name", "?")
    batch = (container.get("run") or {}).get("batch_size")
    return (
        f"{model.get('name', '?')} L{model.get('n_layers')} H{model.get('hidden_size')} "
        f"{hardware.get('name', '?')}{' ' + str(knob) if knob else ''}{layout} {precision} b{batch}"
    )


def host_key(arch: str, hardware_name: str) -> str:
    """Which machine of a platform measured a run (``dabench.host_key``; docs/fitting.md): the
    platform's device name, else the hardware config's name."""
    return f"{arch}:{device_name(arch) or hardware_name}"


def run_tags(rc: RunConfig | None, result: RunResult | None, container: dict[str, Any]) -> dict[str, str]:
    hardware = container.get("hardware") or {}
    tags = {
        "dabench.hardware": str(hardware.get("name")),
        "dabench.arch": str(hardware.get("arch")),
        "dabench.backend": str(hardware.get("backend")),
        "dabench.model": str((container.get("model") or {}).get("name")),
    }
    if result is not None:
        tags.update(
            {
                "dabench.mode": "predict" if result.mode == "predict" else "measure",
                "dabench.status": result.status.value,
            }
        )
        if result.mode == "validate":
            tags["dabench.validate"] = "true"
        if result.mode != "predict":
            tags["dabench.host_key"] = host_key(str(hardware.get("arch")), str(hardware.get("name")))
        if result.reason:
            tags["dabench.reason"] = result.reason
        if result.diagnosis:
            tags["dabench.diagnosis"], tags["dabench.diagnosis_reason"] = result.diagnosis
        if result.ceilings:
            tags["dabench.ceilings"] = result.ceilings.source
        tags.update(result.notes)
        profile = result.profile or result.predicted
        if profile is not None:
            tags["dabench.source"] = profile.source
            tags.update({f"dabench.core.profile.{k}": v for k, v in profile.tags.items()})
    if rc is not None:
        tags.update(rc.tracking.tags)
    else:  # a refused config: only the user's tags the store can hold (the refusal names the others)
        user = (container.get("tracking") or {}).get("tags") or {}
        tags.update({str(k): str(v)[:MAX_TAG_CHARS] for k, v in user.items() if not key_problem(str(k))})
    return tags
