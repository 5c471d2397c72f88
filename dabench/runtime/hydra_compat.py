"""The one place dabench touches Hydra internals (``hydra._internal``), which carry no stability
promise. Tested on hydra-core 1.3.8 (pyproject allows ``>=1.3.2,<1.4``); a Hydra upgrade is checked
here and by tests/hydra_plugins/test_cached_composition.py and tests/cli/test_help_listing.py.

- ``BasicSweeper``: Hydra's grid sweeper (its override expansion is reused by grids and the
  sweep progress callback; dabench's basic sweeper subclasses it).
- ``ConfigLoaderImpl`` and ``get_overrides_dirname``: the config loader the cached loader
  subclasses, and the job's ``override_dirname`` as Hydra writes it.

Each name is imported only when asked for: Hydra's plugin scan re-executes its core plugin
modules, so importing ``basic_sweeper`` early would leave two BasicSweeper classes.
"""

__all__ = ["BasicSweeper", "ConfigLoaderImpl", "get_overrides_dirname"]


def __getattr__(name: str):
    if name == "BasicSweeper":
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

        return BasicSweeper
    if name in ("ConfigLoaderImpl", "get_overrides_dirname"):
        from hydra._internal import config_loader_impl

        return getattr(config_loader_impl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
