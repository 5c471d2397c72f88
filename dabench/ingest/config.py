"""What an ingested vendor artifact states about the run's configuration, in dabench's config keys.

:func:`stated_config` reads only what the artifact (and the run's own config file beside it)
says; nothing is guessed: a key it does not state is listed in :attr:`StatedConfig.missing`.
:func:`run_fields` turns that into what ``dabench ingest --log`` records (``import.config.*``, and
the full config when every key a prediction needs is stated). Details: docs/fitting.md, "Ingested runs".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dabench.config.build import flatten
from dabench.config.compose import compose
from dabench.core.platforms import arch_of_format, platform

#: what a prediction of the run needs stated (dabench config keys)
REQUIRED = (
    "model.n_layers",
    "model.hidden_size",
    "model.n_heads",
    "model.seq_len",
    "model.vocab_size",
    "run.batch_size",
    "precision.name",
)
MAX_CONFIG_CHARS = 1 << 20  #: a config file larger than this is not read
MAX_ALIASES = 64  #: nor one with more YAML anchors and aliases (no alias expansion bombs)
#: the run's own config files looked for beside a Cerebras artifact (first found wins)
CEREBRAS_CONFIG_FILES = ("trainer_params.yaml", "params.yaml")
_MODEL_KEYS = {  # Model Zoo key -> dabench key (first present wins, in this order)
    "model.n_layers": ("num_hidden_layers", "n_layers", "num_layers"),
    "model.hidden_size": ("hidden_size", "d_model"),
    "model.n_heads": ("num_heads", "n_heads", "num_attention_heads"),
    "model.seq_len": ("max_position_embeddings", "max_sequence_length", "src_max_sequence_length"),
    "model.vocab_size": ("vocab_size", "src_vocab_size"),
    "model.ffn_size": ("filter_size", "d_ff", "intermediate_size"),
}

#: where the model section, the batch size and the number of CS systems sit in a cstorch 2.x
#: ``trainer_params.yaml`` and in a Model Zoo 1.x ``params.yaml``
_CSTORCH_PATHS = (
    ("trainer", "init", "model"),
    ("trainer", "fit", "train_dataloader", "batch_size"),
    ("trainer", "init", "backend", "cluster_config", "num_csx"),
)
_MODEL_ZOO_PATHS = (("model",), ("train_input", "batch_size"), ("runconfig", "num_csx"))


@dataclass
class StatedConfig:
    """The config an artifact states: ``values`` (dabench dotted key -> value), ``missing`` (keys of
    :data:`REQUIRED` it does not state), ``sources`` (the files that said it), ``system`` (the vendor
    system's name, when stated) and ``notes`` (what was read but has no dabench key)."""

    values: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    system: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, Any]:
        shown = ("sources", "system", "notes")  # when set
        return {
            "stated": dict(self.values),
            "missing": list(self.missing),
            **{k: getattr(self, k) for k in shown if getattr(self, k)},
        }


def _count(value: Any) -> int | None:
    """A positive int from an untrusted value (bool and non-integral numbers refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
        return None
    return int(value)


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _model_values(model: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    encoder, decoder = _count(model.get("encoder_num_hidden_layers")), _count(model.get("decoder_num_hidden_layers"))
    if encoder and decoder:  # an encoder-decoder of L + L layers: 2L blocks, L with cross-attention
        values["model.n_layers"] = encoder + decoder
        values["model.cross_attention_layers"] = decoder
    found = {
        key: next((_count(model[n]) for n in names if n in model and _count(model[n])), None)
        for key, names in _MODEL_KEYS.items()
        if key not in values
    }
    values.update({key: count for key, count in found.items() if count})
    tied = model.get("share_embedding_weights", model.get("tie_embeddings"))
    if isinstance(tied, bool):
        values["model.tie_embeddings"] = tied
    name = model.get("name")
    if isinstance(name, str) and re.fullmatch(r"[\w.-]{1,64}", name):
        values["model.name"] = name
    return values


def cerebras_params(data: Any) -> dict[str, Any]:
    """dabench key -> value of a Cerebras run config: cstorch 2.x ``trainer_params.yaml`` or Model
    Zoo 1.x ``params.yaml`` (keys read: docs/fitting.md, "Ingested runs")."""
    if not isinstance(data, Mapping):
        return {}
    paths = _CSTORCH_PATHS if isinstance(data.get("trainer"), Mapping) else _MODEL_ZOO_PATHS
    model, batch, systems = (_get(data, *path) for path in paths)
    model = model if isinstance(model, Mapping) else {}
    values = _model_values(model)
    if _count(batch):
        values["run.batch_size"] = _count(batch)
    mixed = model.get("mixed_precision")
    if not isinstance(mixed, bool):
        mixed = _get(data, "trainer", "init", "precision", "enabled")
    if isinstance(mixed, bool):
        values["precision.name"] = "mixed" if mixed else "fp32"
    if _count(systems) and _count(systems) > 1:
        values["parallel.strategy"], values["parallel.degree"] = "dp", _count(systems)
    elif _count(systems) == 1:
        values["parallel.strategy"] = "none"
    return values


def _system(folder: Path) -> str | None:
    """The CS system of an appliance run (run_meta.json: execute_jobs[].system_versions)."""
    try:
        meta = json.loads((folder / "run_meta.json").read_text())
        jobs = meta.get("execute_jobs") if isinstance(meta, dict) else None
        for job in jobs if isinstance(jobs, list) else ():
            systems = job.get("system_versions") if isinstance(job, dict) else None
            if isinstance(systems, dict) and systems:
                name = str(sorted(systems)[0])
                return name[:100] if re.fullmatch(r"[\w.-]+", name) else None
    except (OSError, ValueError, RecursionError, TypeError):
        return None
    return None


def stated_config(fmt: str, target: Path, root: Path | None, batch: int | None = None) -> StatedConfig:
    """What the artifact ``target`` of format ``fmt`` states (module docstring). ``root`` is the
    checked copy of the ingested folder (None for a single file: nothing beside it is read);
    ``batch`` the batch the artifact itself logged (a cstorch run.log's effective batch size), used
    when no config file states one."""
    stated = StatedConfig()
    try:
        if fmt == "cerebras_compile_report":  # the layer-pipelined compiler's report (R1.x): its steady rate
            stated.values["hardware.options.execution_mode"] = "pipelined"
            stated.values["hardware.options.compile_estimate"] = True
        if fmt.startswith("cerebras") and root is not None:
            folders = [target if target.is_dir() else target.parent]
            folders += [f for f in (folders[0].parent, root) if f not in folders and f.is_relative_to(root)]
            path = next((f / n for f in folders for n in CEREBRAS_CONFIG_FILES if (f / n).is_file()), None)
            if path is not None:  # read, never raising on its content
                import yaml

                text = path.read_text(errors="replace")
                if len(text) > MAX_CONFIG_CHARS or len(re.findall(r"[*&][\w-]", text)) > MAX_ALIASES:
                    stated.notes.append(
                        f"{path.name} not read (over {MAX_CONFIG_CHARS} characters or {MAX_ALIASES} YAML aliases)"
                    )
                else:
                    try:
                        stated.values.update(cerebras_params(yaml.safe_load(text)))
                    except (yaml.YAMLError, RecursionError, ValueError, TypeError, AttributeError) as error:
                        stated.notes.append(f"{path.name} unreadable ({type(error).__name__})")
                stated.sources.append(str(path.relative_to(root)))
            if fmt == "cerebras_appliance_run":
                stated.system = next((s for s in (_system(f) for f in folders) if s), None)
        if _count(batch) and "run.batch_size" not in stated.values:
            stated.values["run.batch_size"] = _count(batch)
            stated.notes.append("run.batch_size: the artifact's logged effective batch size")
    except (OSError, ValueError, TypeError, AttributeError, RecursionError) as error:
        return StatedConfig(missing=list(REQUIRED), notes=[f"config not read ({type(error).__name__})"])
    stated.missing = [k for k in REQUIRED if k not in stated.values]
    return stated


def host_key(fmt: str, stated: StatedConfig) -> str:
    """The ingested run's machine: ``<arch>:<system>`` when the artifact names the system, else
    ``<arch>:<format>`` (a compiler's estimate and a measurement are never fitted together)."""
    return f"{arch_of_format(fmt) or fmt}:{stated.system or fmt}"


def _override(key: str, value: Any) -> str:
    return f"++{key}={str(value).lower() if isinstance(value, bool) else value}"


def run_fields(fmt: str, stated: StatedConfig) -> tuple[dict[str, Any], dict[str, str]]:
    """(params, tags) ``dabench ingest --log`` records for the config (module docstring)."""
    arch = arch_of_format(fmt)
    params: dict[str, Any] = {
        **{f"import.config.{k}": v for k, v in stated.values.items()},
        "import.config.missing": ",".join(stated.missing) or "none",
    }
    tags = {"dabench.host_key": host_key(fmt, stated)}
    if arch:
        tags["dabench.arch"] = arch
    if stated.sources:
        params["import.config.from"] = ",".join(stated.sources)[:500]
    if arch is None or not stated.complete:
        return params, tags

    values = dict(stated.values)
    overrides = [f"hardware={arch}", f"precision={values.pop('precision.name')}", "hardware.mode=measure"]
    overrides += [_override(k, v) for k, v in sorted(values.items())]
    if "model.name" not in values:
        overrides.append(f"++model.name=ingested_{fmt}")
    try:
        container = compose(overrides)
    except Exception as error:  # a stated value dabench's config refuses: said, the run stays listed
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        params["import.config.error"] = first[:300]
        return params, tags
    params.update(flatten(container))
    stated_keys = set(stated.values) | {"model.name", "hardware.mode"}
    assumed = [k for k in flatten(container.get("model") or {}, "model.") if k not in stated_keys]
    assumed += [k for k in platform(arch).mode_keys if k not in stated_keys]  # dabench's default, not the artifact's
    params["import.config.assumed"] = ",".join(assumed) or "none"
    return params, tags
