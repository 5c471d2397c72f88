"""Fitting the analytical models' constants to measurements (``dabench fit``).

Modules and method: docs/fitting.md (its introduction) and docs/perfmodel.md; reading a set at run
time is :mod:`dabench.perfmodel.constants`.
"""
