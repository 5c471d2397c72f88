"""Fit from your own runs: measured runs become calibration points of their platform, and a bounded
least-squares refit of the model's fittable knobs becomes a named constant set.

Pure: the caller (``dabench fit --from-mlflow``, dabench/cli/fit/from_mlflow.py) hands over one
mapping per run, ``{"run_id", "tags", "params", "metrics"}`` (MLflow's run data); nothing here
touches MLflow or a file. One job per module:

- :mod:`.points`: runs -> :class:`RunPoint` s, each left-out run with its reason;
- :mod:`.hosts`: a run's platform and host key; points grouped by both;
- :mod:`.predict`: a point's config, op graph and ceilings; the model's prediction of it;
- :mod:`.solve`: the fittable knobs and their bounded least-squares refit;
- :mod:`.class_times`: per-class residuals of runs that profiled their op classes;
- :mod:`.group_fit`: one machine's fit, scored out of sample beside the noise floor;
- :mod:`.constant_sets`: the constant-set format of a fit; :mod:`.report`: its before/after text;
- :mod:`.drift`: recent runs outside a set's band.

This package's namespace is the public surface (the names below). Details: docs/fitting.md.
"""

from __future__ import annotations

from dabench.fit.from_runs.constant_sets import BAND_METHOD, build_set, platform_entry
from dabench.fit.from_runs.drift import Drift, drift
from dabench.fit.from_runs.group_fit import GroupFit, fit_group, folds, noise_floor
from dabench.fit.from_runs.hosts import INGEST_ARCH, host_key, platform_of
from dabench.fit.from_runs.points import (
    LeftOut,
    RunPoint,
    config_key,
    group_points,
    points_from_runs,
    unflatten,
)
from dabench.fit.from_runs.predict import base_options, predict, predict_profile, prepare, quiet_model
from dabench.fit.from_runs.report import last_line, report
from dabench.fit.from_runs.solve import FIT_BOUNDS, fittable, refit, residuals

__all__ = [
    "BAND_METHOD",
    "FIT_BOUNDS",
    "INGEST_ARCH",
    "Drift",
    "GroupFit",
    "LeftOut",
    "RunPoint",
    "base_options",
    "build_set",
    "config_key",
    "drift",
    "fit_group",
    "fittable",
    "folds",
    "group_points",
    "host_key",
    "last_line",
    "noise_floor",
    "platform_entry",
    "platform_of",
    "points_from_runs",
    "predict",
    "predict_profile",
    "prepare",
    "quiet_model",
    "refit",
    "report",
    "residuals",
    "unflatten",
]
