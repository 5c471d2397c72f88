"""The platform registry: what dabench does differently per platform (``hardware.arch``), one
:class:`Platform` record each. Records are declared in each platform's folder
(dabench/platforms/<family>/__init__.py: ``PLATFORM``) or by an installed distribution through the
``dabench.platforms`` entry point group (name = the ``hardware=`` name, value = its Platform). The
rest of dabench asks :func:`platform` and the helpers below and never compares an arch name itself.
Adding a platform: docs/platforms.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import import_module
from typing import Any, Callable, Mapping

from dabench.core.status import ConfigError

GROUP = "dabench.platforms"  #: the entry point group of platform packages


@dataclass(frozen=True)
class PowerFigure:
    """A platform's power for the energy ESTIMATE of ``dabench advise`` (docs/advise.md, "Energy
    and cost"); ``watts_per_chip`` None where no figure is sourced (never a guess)."""

    watts_per_chip: float | None  #: watts per chip as dabench counts chips (metric ``chips``)
    kind: str  #: tdp | max | average | unsourced
    covers: str  #: what the figure includes
    document: str = ""  #: where it is printed
    locator: str = ""  #: where in the document

    @property
    def sourced(self) -> bool:
        return self.watts_per_chip is not None

    def label(self) -> str:
        if not self.sourced:
            return f"unsourced ({self.covers})"
        return f"{self.watts_per_chip:,.0f} W per chip, {self.kind}, {self.covers}: {self.document}, {self.locator}"


@dataclass(frozen=True)
class Platform:
    """One platform's facts and parts; a part that needs torch, a vendor SDK or the model code is a
    function that imports it on first call."""

    name: str  #: ``hardware.arch``; also its preset (``hardware=<name>``) and advise's name
    predict: Callable | None = None  #: the analytical model: ``predict(rc, graph, ceilings) -> Profile``
    backends: Mapping[str, Callable[[], type]] = field(default_factory=dict)  #: ``hardware.backend`` -> its class
    options: Callable[[], type] | None = None  #: its knobs: the dataclass of ``hardware.options``
    host_backends: tuple[str, ...] = ()  #: of ``backends``, those run on this machine's CPU and memory
    host_cpu: bool = False  #: it is this machine's CPU: null ceilings calibrated, threads set, probed
    tf32: bool = False  #: fp32 matmuls may run on TF32 units (``hardware.options.tf32``)
    device_name: Callable[[], str | None] | None = None  #: this machine's device (the run's host key)
    ingest: Callable[[], Any] | None = None  #: its artifact parser: ``detect(path)``, ``parse(fmt, path)``
    formats: tuple[str, ...] = ()  #: ingested artifact formats this platform's model prices
    mode_keys: tuple[str, ...] = ()  #: compile-mode keys an ingested run takes dabench's default for
    pipeline_grad_accum: bool = False  #: a pipeline over p stages needs >= 2p - 1 micro-batches a step
    sweep: str | None = None  #: the shipped Optuna sweep (sweeps/<sweep>.yaml) advise starts from
    space: Callable | None = None  #: advise's shaping of that space: ``(space, args, config, chips) -> space``
    tiles_per_chip: int | None = None  #: an instance of ``hardware.options.tiles`` counts as tiles / this chips
    generations: bool = False  #: presets are chip generations (cuda_a100, ...): the preset name is a reach fact
    #: generation presets (``hardware=<name>``, arch this record's), each with its own power: advise searches
    #: them by name; without a generation knob, their band says nothing calibrated is near
    presets: Mapping[str, PowerFigure] = field(default_factory=dict)
    power: PowerFigure = PowerFigure(None, "unsourced", "no power figure")
    fit_bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)  #: knob -> bounds a fit may move
    conf: str | None = None  #: a config folder Hydra searches for its ``hardware/<name>.yaml`` (packages)


def imported(module: str, name: str | None = None) -> Callable[[], Any]:
    """A part imported on first call: the getter of ``module`` (or of its attribute ``name``), for a
    record whose part needs torch, a vendor SDK or the model code."""

    def get():
        found = import_module(module)
        return getattr(found, name) if name else found

    return get


def deferred(module: str, name: str) -> Callable:
    """A function imported on first call: ``module.name`` called with the arguments given, for a
    record's ``predict`` or ``space`` whose code needs torch or the model code; ``target()`` gets
    the function itself (its signature). Like a namedtuple it belongs to the module that makes it
    (the platform folder whose files version the model: perfmodel/constants.py)."""

    def call(*args):
        return call.target()(*args)

    call.target = imported(module, name)
    call.__module__ = sys._getframe(1).f_globals["__name__"]
    return call


_UNKNOWN = Platform("")  #: what an unknown arch is asked for: no parts, no special case


@lru_cache(maxsize=1)
def registry() -> dict[str, Platform]:
    """name -> Platform: the in-tree folders, then the entry points; a plugin that fails to load or
    whose name is taken is one line on stderr naming its distribution, and is left out."""
    from importlib.metadata import entry_points

    from dabench.platforms import IN_TREE

    found = {p.name: p for p in IN_TREE}
    for entry in entry_points(group=GROUP):
        where = f"{entry.dist.name if entry.dist else '?'} ({entry.name} = {entry.value})"
        try:
            record = entry.load()
            if not isinstance(record, Platform) or record.name != entry.name:
                raise TypeError(f"not a dabench Platform named {entry.name!r}")
            if record.name in found:
                raise ValueError(f"the platform name {entry.name!r} is taken")
            found[record.name] = record
        except Exception as error:  # a broken plugin must not take the others down
            print(f"dabench: platform plugin {where} left out: {type(error).__name__}: {error}", file=sys.stderr)
    return found


def platform(arch: str | None) -> Platform:
    """``arch``'s record; an unknown arch gets an empty one (no model, no backend, no special case)."""
    return registry().get(str(arch), _UNKNOWN)


def known(arch: str, field_: str = "hardware.arch") -> Platform:
    """``arch``'s record, or ConfigError naming ``field_``, the value and the valid names."""
    if arch not in registry():
        raise ConfigError(field_, arch, f"one of {', '.join(registry())}")
    return registry()[arch]


def names() -> tuple[str, ...]:
    return tuple(registry())


def preset(name: str) -> Platform:
    """The record ``hardware=<name>`` runs on: a platform's own, or, for a generation preset of a
    family (its ``presets``), the family's with that preset's power figure."""
    for record in registry().values():
        if name in record.presets:
            return replace(record, power=record.presets[name])
    return platform(name)


def presets() -> tuple[str, ...]:
    """Every platform and every generation preset of one (what ``dabench advise platforms=`` takes)."""
    return tuple(name for p in registry().values() for name in (p.name, *p.presets))


def accelerators() -> tuple[str, ...]:
    """Every platform but this machine's CPU, each with its generation presets (what ``dabench
    advise`` searches by default)."""
    return tuple(name for p in registry().values() if not p.host_cpu for name in (p.name, *p.presets))


def backend_class(backend: str) -> type:
    """The Backend class of ``hardware.backend`` = ``backend``; KeyError names the known ones."""
    found = {name: get for p in registry().values() for name, get in p.backends.items()}
    if backend not in found:
        raise KeyError(f"unknown backend {backend!r}; known: {', '.join(sorted(found))}")
    return found[backend]()


def on_host_cpu(backend: str) -> bool:
    """Whether ``hardware.backend`` = ``backend`` runs on this machine's CPU and memory."""
    return any(backend in p.host_backends for p in registry().values())


def arch_of_format(fmt: str) -> str | None:
    """The platform whose model prices an ingested artifact of format ``fmt``."""
    return next((p.name for p in registry().values() if fmt in p.formats), None)


def device_name(arch: str) -> str | None:
    """This machine's device of ``arch`` (its CPU model, its GPU), or None where the config names it."""
    get = platform(arch).device_name
    return get() if get else None
