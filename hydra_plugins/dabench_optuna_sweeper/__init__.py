"""dabench's Hydra sweeper on Optuna 5 (ask/tell): ``hydra/sweeper=dabench_optuna``.

Hydra imports every module under the ``hydra_plugins`` namespace package when it scans for
plugins; this package registers its config (``config.py``) and its Sweeper class
(``sweeper.py``). Optuna, MLflow and dabench.tune are imported only when a sweep starts.
"""
