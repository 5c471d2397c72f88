"""Quiet by default: :func:`install` (before torch or mlflow is imported) sets the environment
defaults below and filters setuptools' deprecation warnings, unless ``-v``/``--verbose`` (taken off
the command line) or ``hydra.verbose`` asks for everything; a variable the user set is kept.
:func:`env_defaults` alone is what a library path (the Python API) gets before the profiler starts."""

from __future__ import annotations

import os
import sys
import warnings

VERBOSE_FLAGS = ("-v", "--verbose")
ENV_DEFAULTS = {
    "KINETO_LOG_LEVEL": "6",  # above every kineto level: no "USDT: ... profiler_start/stop" lines
    "MLFLOW_LOGGING_LEVEL": "WARNING",  # no "Creating initial MLflow database tables" or sampler start/stop
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",  # no "View run ... at: http://..." per run
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",  # no "Downloading artifacts" bars (fit --from-mlflow, report)
}


def verbose_requested(argv: list[str]) -> bool:
    """``-v``, ``--verbose`` or a ``hydra.verbose`` override other than false."""
    for arg in argv:
        if arg in VERBOSE_FLAGS:
            return True
        key, _, value = arg.lstrip("+").partition("=")
        if key == "hydra.verbose" and value.strip().lower() not in ("false", "null", "[]", ""):
            return True
    return False


def install(argv: list[str] | None = None) -> bool:
    """Silence the known third-party noise unless verbose (returned); removes ``-v``/``--verbose``
    from ``argv`` (default ``sys.argv``)."""
    argv = sys.argv if argv is None else argv
    verbose = verbose_requested(argv[1:]) or is_verbose()  # a second call, or a child of a -v process
    argv[:] = [a for i, a in enumerate(argv) if i == 0 or a not in VERBOSE_FLAGS]
    if verbose:
        os.environ["DABENCH_VERBOSE"] = "1"
        return True
    env_defaults()
    warnings.filterwarnings("ignore", message=r"pkg_resources is deprecated")  # a UserWarning or a DeprecationWarning
    warnings.filterwarnings("ignore", message=r"Setuptools is replacing distutils")
    return False


def env_defaults() -> None:
    """The environment defaults above, unless verbose (``DABENCH_VERBOSE=1``) or set by the user."""
    if not is_verbose():
        for name, value in ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)


def is_verbose() -> bool:
    """True in a process started with ``-v`` (or a child of one)."""
    return os.environ.get("DABENCH_VERBOSE") == "1"
