"""Deployment tuning: Optuna studies over deployment settings (batch size, precision, pipeline
placement, parallel degree, ...) for the best throughput.

- :mod:`dabench.tune.space`: Hydra override grammar -> Optuna distributions.
- :mod:`dabench.tune.structured`: the structured-space hook protocol; :mod:`dabench.tune.ipu`
  (IPU pipeline placements) and :mod:`dabench.tune.placement` (compositions of layers).
- :mod:`dabench.tune.sweep`: a study's sweep (settings, stores, parent run, trials, result);
  :mod:`dabench.tune.driver`: the ask/launch/tell loop; :mod:`dabench.tune.study`: storage,
  naming and resume; :mod:`dabench.tune.sampling`: samplers and failed-trial handling.
- :mod:`dabench.tune.best`, :mod:`dabench.tune.plots`, :mod:`dabench.tune.parent_run`: the
  study's result, its plots and its MLflow parent run.
- ``python -m dabench study``: the best deployment as a ready-to-run command line.

The Hydra glue around :mod:`dabench.tune.sweep` is ``hydra_plugins/dabench_optuna_sweeper``.
"""
