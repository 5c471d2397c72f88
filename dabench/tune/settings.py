"""The sweeper's settings (:class:`SweepSettings`, also the Hydra structured config of
``hydra/sweeper=dabench_optuna``: hydra_plugins/dabench_optuna_sweeper/config.py), checked before the
study or its storage is touched (:func:`check_settings`: ConfigError naming the field, the value and
what is valid), and the recorded search space a resumed study must keep (:func:`check_resume`).
Optuna is imported only when a sweep starts: Hydra imports this module whenever it scans plugins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from dabench.config.build import flatten
from dabench.core.status import ConfigError
from dabench.tracking.redact import redact_uri

if TYPE_CHECKING:
    import optuna

SPACE_ATTR = "dabench.space"
#: storage dialects Optuna's RDBStorage is used with
DIALECTS = ("sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql")
MAX_NAME_CHARS = 512  #: Optuna's study_name column


def _positive_int(field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(field, value, "a positive integer")


def _name(field: str, value: Any) -> None:
    if value is not None and (
        not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_CHARS or not value.isprintable()
    ):
        raise ConfigError(field, value, f"a non-empty printable name of at most {MAX_NAME_CHARS} characters")


def check_storage(storage: Any) -> None:
    """``hydra.sweeper.storage``: None or an SQLAlchemy URL of a known dialect."""
    if storage is None:
        return
    field = "hydra.sweeper.storage"
    if not isinstance(storage, str) or "://" not in storage:
        raise ConfigError(
            field,
            redact_uri(str(storage)),
            "an SQLAlchemy URL such as sqlite:///path/optuna.db or postgresql://user@host/db",
        )
    from sqlalchemy.engine import make_url

    try:
        url = make_url(storage)
    except Exception as error:
        raise ConfigError(field, redact_uri(storage), f"an SQLAlchemy URL ({error})") from None
    if url.get_backend_name() not in DIALECTS:
        raise ConfigError(field, redact_uri(storage), f"a URL of one of {', '.join(DIALECTS)}")
    if url.get_backend_name() == "sqlite" and not url.database:
        raise ConfigError(field, redact_uri(storage), "sqlite:///<path to a file> (workers and resumes need a file)")


@dataclass
class StructuredSpaceSettings:
    """``hydra.sweeper.space``: a structured search space (dabench.tune.structured)."""

    hook: Optional[str] = None  #: a structured-space factory 'module:factory'
    args: Dict[str, Any] = field(default_factory=dict)  #: its keyword arguments


@dataclass
class SweepSettings:
    """The sweeper's settings, each settable as ``hydra.sweeper.<field>=...`` (typing spelled for
    OmegaConf, which reads these annotations)."""

    sweep_name: Optional[str] = None  #: the sweep's name: the first part of the derived study name
    study_name: Optional[str] = None  #: default <sweep_name>-<model>[-<hash of other overrides>]
    storage: Optional[str] = None  #: an SQLAlchemy URL; default sqlite:///<launch dir>/mlruns/optuna.db
    direction: str = "maximize"  #: maximize (throughput) or minimize
    n_trials: int = 20  #: the study's total trials (a re-run resumes and runs the missing ones)
    n_jobs: int = 1  #: trials launched together per batch (capped at the cores for local launchers)
    sampler: str = "tpe"  #: tpe, random, gp, cmaes, qmc, nsgaii or bruteforce
    seed: Optional[int] = None  #: none: each worker its own; a resumed study uses seed + its trial count
    sampler_options: Dict[str, Any] = field(default_factory=dict)  #: keyword arguments of the optuna.samplers class
    failed_as_infeasible: bool = True  #: with TPE, show failed trials to the sampler as infeasible points
    allow_oversubscribe: bool = False  #: let n_jobs exceed this machine's cores (over cpus_per_task)
    allow_space_change: bool = False  #: resume a study whose search space changed (refused, exit 2, otherwise)
    params: Dict[str, Any] = field(default_factory=dict)  #: {key: choice(...), range(...), interval(...) or a value}
    space: StructuredSpaceSettings = field(default_factory=StructuredSpaceSettings)


def check_settings(settings: SweepSettings) -> optuna.samplers.BaseSampler:
    """Every scalar setting of the sweeper; returns the sampler they describe."""
    from dabench.tune.sampling import make_sampler

    if settings.direction not in ("maximize", "minimize"):
        raise ConfigError("hydra.sweeper.direction", settings.direction, "maximize or minimize")
    _positive_int("hydra.sweeper.n_trials", settings.n_trials)
    _positive_int("hydra.sweeper.n_jobs", settings.n_jobs)
    seed = settings.seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32):
        raise ConfigError("hydra.sweeper.seed", seed, "null or an integer in [0, 2**32)")
    for name, value in (
        ("failed_as_infeasible", settings.failed_as_infeasible),
        ("allow_oversubscribe", settings.allow_oversubscribe),
        ("allow_space_change", settings.allow_space_change),
    ):
        if not isinstance(value, bool):
            raise ConfigError(f"hydra.sweeper.{name}", value, "true or false")
    _name("hydra.sweeper.study_name", settings.study_name)
    _name("hydra.sweeper.sweep_name", settings.sweep_name)
    check_storage(settings.storage)
    if not isinstance(settings.sampler_options, dict):
        raise ConfigError("hydra.sweeper.sampler_options", settings.sampler_options, "a mapping of keyword arguments")
    return make_sampler(settings.sampler, settings.seed, settings.sampler_options, settings.failed_as_infeasible)


def space_fingerprint(
    space: Any, hook: str | None, args: dict[str, Any], config: Mapping[str, Any] | None = None
) -> str:
    """The search space as JSON: each dimension's distribution, the fixed overrides that are
    not tracking settings, the structured hook and its arguments, and every value of the
    composed task ``config`` the trials start from (tracking settings aside): what a sweep file
    sets outside its params."""
    import optuna

    from dabench.tune.study import NAME_NEUTRAL_PREFIXES

    document = {
        "params": {d.name: optuna.distributions.distribution_to_json(d.distribution) for d in space.parsed.dimensions},
        "fixed": sorted(o for o in space.parsed.fixed if not o.startswith(NAME_NEUTRAL_PREFIXES)),
        "hook": hook,
        "args": args,
    }
    if config is not None:
        document["config"] = {k: v for k, v in flatten(config).items() if not k.startswith("tracking.")}
    return json.dumps(document, sort_keys=True, default=str)


def _changed(recorded: str, now: str) -> list[str]:
    before, after = json.loads(recorded), json.loads(now)
    keys = []
    for part in ("params", "fixed", "hook", "args", "config"):
        if part not in before:  # a study recorded before this part was: not compared
            continue
        a, b = before.get(part), after.get(part)
        if isinstance(a, dict) and isinstance(b, dict):
            keys += [f"{part}.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        elif a != b:
            keys.append(part)
    return keys


def check_resume(study: optuna.Study, fingerprint: str, allow_change: bool) -> bool:
    """Refuse (ConfigError) a study created under another search space unless ``allow_change``;
    returns whether the study's recorded space must be (re)written."""
    recorded = study.user_attrs.get(SPACE_ATTR)
    if recorded is None or recorded == fingerprint or allow_change:
        return recorded != fingerprint
    changed = _changed(recorded, fingerprint)
    if not changed:  # only parts it did not record yet: record them now
        return True
    raise ConfigError(
        "hydra.sweeper.params",
        ", ".join(changed),
        f"the search space study {study.study_name} was created with (it changed; run it under a new "
        "hydra.sweeper.study_name, or resume with hydra.sweeper.allow_space_change=true)",
    )
