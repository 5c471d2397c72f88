"""Runner isolation: the orchestrator (Hydra, MLflow, Optuna) starts the execution side as a
subprocess, possibly under a vendor SDK's interpreter, and talks to it through JSON files."""

from dabench.isolation.subprocess_runner import PROTOCOL, REPO_ROOT, run_child

__all__ = ["PROTOCOL", "REPO_ROOT", "run_child"]
