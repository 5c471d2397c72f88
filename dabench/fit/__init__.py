"""Fitting the analytical models' constants to measurements (``dabench fit``).

- points.csv / :mod:`.points`: calibration points, each with its source (a document and locator,
  or an MLflow run); :mod:`.sources`: where every number of conf/hardware/*.yaml comes from.
- :mod:`.evaluate`: predict a point (its config composed by :func:`dabench.config.compose`);
  :mod:`.refit`: the one bounded least-squares solver; :mod:`.cv`: cross-validation by source.
- :mod:`.constant_set`: the one constant-set writer (published.json from ``fit --cv --write``;
  named sets from ``fit --from-mlflow``); residuals.json from ``fit --write``.
- :mod:`.runs`: measured runs of an MLflow store as points; :mod:`.machine`: their fit per machine, drift.

Reading a set at run time is :mod:`dabench.perfmodel.constants`. Details: docs/perfmodel.md and
docs/fitting.md.
"""
