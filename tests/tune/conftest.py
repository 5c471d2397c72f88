"""Tuning tests fail on any Optuna deprecation (FutureWarning) or experimental-API warning."""

import warnings

import pytest
from optuna.exceptions import ExperimentalWarning


@pytest.fixture(autouse=True)
def _no_optuna_deprecations():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", ExperimentalWarning)
        yield
