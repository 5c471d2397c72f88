"""Quiet by default: third-party noise silenced at its source, brought back by ``-v``.

What a default ``python -m dabench`` would otherwise print on stderr, and where it comes from:

- ``USDT: ... profiler_start`` / ``profiler_stop``: libkineto (torch.profiler, used once per
  measured run for the per-op-class times) logs at its USDT level; ``KINETO_LOG_LEVEL=6`` (above
  every kineto level) silences it. Read when torch loads, so it is set before torch is imported
  (and inherited by rank and vendor child processes).
- ``INFO mlflow.store.db.utils: Creating initial MLflow database tables...`` and the system
  metrics sampler's start/stop lines: MLflow's own logger at INFO; ``MLFLOW_LOGGING_LEVEL=WARNING``
  keeps its warnings and errors.
- ``View run ... at: http://...`` / ``View experiment at: ...``: MLflow prints both to stdout at the
  end of every run recorded on a tracking server; ``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT=true``.
- setuptools' ``pkg_resources is deprecated`` and ``Setuptools is replacing distutils``
  (``_distutils_hack``), when a library imports either: filtered with :mod:`warnings`.
- The same vendor line once per job (``hardware.mode=auto on ipu: PREDICTED, not measured:
  PopTorch ... is not importable``): dabench.pipeline.execute warns once per process and hardware, then
  logs it at DEBUG.

``-v`` / ``--verbose`` (taken off the command line before Hydra sees it) or
``hydra.verbose=...`` leaves all of it on; a variable the user set (``KINETO_LOG_LEVEL``,
``MLFLOW_LOGGING_LEVEL``) is never overridden.
"""

from __future__ import annotations

import os
import sys
import warnings

VERBOSE_FLAGS = ("-v", "--verbose")
ENV_DEFAULTS = {"KINETO_LOG_LEVEL": "6", "MLFLOW_LOGGING_LEVEL": "WARNING", "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}


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
    """Silence the known third-party noise unless verbose; removes ``-v``/``--verbose`` from
    ``argv`` (default ``sys.argv``). Returns whether the run is verbose. Call before torch or
    mlflow is imported."""
    argv = sys.argv if argv is None else argv
    verbose = verbose_requested(argv[1:]) or is_verbose()  # a second call, or a child of a -v process
    argv[:] = [a for i, a in enumerate(argv) if i == 0 or a not in VERBOSE_FLAGS]
    if verbose:
        os.environ["DABENCH_VERBOSE"] = "1"
        return True
    for name, value in ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    warnings.filterwarnings("ignore", message=r"pkg_resources is deprecated", category=UserWarning)
    warnings.filterwarnings("ignore", message=r"pkg_resources is deprecated", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=r"Setuptools is replacing distutils")
    return False


def is_verbose() -> bool:
    """True in a process started with ``-v`` (or a child of one)."""
    return os.environ.get("DABENCH_VERBOSE") == "1"
