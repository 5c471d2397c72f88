"""dabench: the DABench-LLM method as an MLOps-integrated benchmarking harness."""

__version__ = "0.1.0"
