"""The one place dabench touches Hydra internals (``hydra._internal``, no stability promise; tested
on hydra-core 1.3.8). Each name is imported only when asked for: Hydra's plugin scan re-executes its
core plugin modules, so importing ``basic_sweeper`` early would leave two BasicSweeper classes."""

__all__ = ["BasicSweeper", "ConfigLoaderImpl", "get_overrides_dirname"]


def __getattr__(name: str):
    if name == "BasicSweeper":
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

        return BasicSweeper
    if name in ("ConfigLoaderImpl", "get_overrides_dirname"):
        from hydra._internal import config_loader_impl

        return getattr(config_loader_impl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
