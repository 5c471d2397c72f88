"""dabench: the DABench-LLM method as an MLOps-integrated benchmarking harness.

``from dabench import predict, run`` (dabench/api.py) is loaded on first use, so ``import
dabench`` stays cheap.
"""

__version__ = "0.1.0"
__all__ = ["predict", "run", "Result"]


def __getattr__(name: str):
    if name in __all__:
        from dabench import api

        return getattr(api, name)
    raise AttributeError(f"module 'dabench' has no attribute {name!r}")
