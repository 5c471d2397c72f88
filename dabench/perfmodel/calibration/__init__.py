"""Calibration of the analytical models against public measurements.

- points.csv / :mod:`.points`: the published points, one row each with its source.
- :mod:`.sources`: where every number of conf/hardware/*.yaml comes from (sourced, fitted, setting).
"""
