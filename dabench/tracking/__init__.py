"""MLflow tracking: store resolution, run logging and the multirun parent-run callback.

mlflow itself is imported only when something is logged, so ``--help`` and configs stay fast.
"""

from dabench.tracking.run_logger import PARENT_ENV, log_run
from dabench.tracking.store import client_and_experiment, launch_dir, tracking_uri

__all__ = ["PARENT_ENV", "client_and_experiment", "launch_dir", "log_run", "tracking_uri"]
