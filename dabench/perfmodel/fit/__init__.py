"""Calibration of the analytical models against public measurements.

- points.csv / :mod:`.points`: the published points, one row each with its source.
- :mod:`.sources`: where every number of conf/hardware/*.yaml comes from (sourced, fitted, setting).
- :mod:`.evaluate`: predict one point; :mod:`.fit`: refit the ``fitted`` constants (scipy).
- residuals.json: each point's predicted value and error for the shipped constants, written by
  ``python -m dabench fit --write`` (tests/perfmodel/test_calibration.py checks it is current).
- :mod:`.cv`: leave-one-source-out error of every point and the bands' nested coverage (``fit --cv``).
- :mod:`.reach`: a configuration's distance from the calibration, and the band it gives.
- :mod:`.constant_set`: the constant set a prediction used, its residuals and bands
  (published.json, written by ``python -m dabench fit --cv --write``).
- :func:`model_version`, :func:`error_band` and :func:`run_tags`: what every predicted run records as tags.

docs/perfmodel.md documents all of it.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from dabench.config.paths import CONF_DIR
from dabench.core.status import ConfigError

PACKAGE = Path(__file__).resolve().parents[2]  # dabench/
ROOT = PACKAGE.parent
RESIDUALS_JSON = Path(__file__).with_name("residuals.json")

#: files whose content decides a prediction (code constants and fitted parameters)
_COMMON = (
    "dabench/perfmodel/assemble.py",
    "dabench/perfmodel/capacity.py",
    "dabench/perfmodel/comm.py",
    "dabench/perfmodel/pipeline.py",
    "dabench/perfmodel/roofline.py",
    "dabench/perfmodel/knobs/__init__.py",
    "dabench/workload/opgraph.py",
    "dabench/metrics/summary.py",
)


def _model_files(arch: str | None) -> list[Path]:
    if arch is None:
        files = sorted((PACKAGE / "perfmodel").rglob("*.py")) + sorted((CONF_DIR / "hardware").glob("*.yaml"))
        files += [ROOT / "dabench/workload/opgraph.py", ROOT / "dabench/metrics/summary.py"]
        return [f for f in files if "fit" not in f.parts]
    files = [ROOT / name for name in _COMMON]
    files += [
        PACKAGE / "perfmodel" / f"{arch}.py",
        PACKAGE / "perfmodel" / "knobs" / f"{arch}.py",
        CONF_DIR / "hardware" / f"{arch}.yaml",
    ]
    if arch in ("cpu", "cuda"):
        files.append(PACKAGE / "perfmodel" / "device.py")
    # variants that inherit the arch's options (conf/hardware/cuda_a100.yaml: defaults [cuda])
    files += sorted((CONF_DIR / "hardware").glob(f"{arch}_*.yaml"))
    return files


@lru_cache(maxsize=None)
def model_version(arch: str | None = None) -> str:
    """12 hex digits of a SHA-256 over the model's code and constants: the perfmodel modules of
    ``arch`` (all of them when None), the op graph, the metrics, and conf/hardware/<arch>.yaml
    (whose options hold the fitted parameters). Two predictions with the same version come from
    the same model."""
    digest = hashlib.sha256()
    for path in _model_files(arch):
        if path.exists():
            # conf/... as in a checkout, also for a wheel's bundled copies (dabench/_data/conf/...)
            name = ("conf" / path.relative_to(CONF_DIR)) if path.is_relative_to(CONF_DIR) else path.relative_to(ROOT)
            digest.update(str(name).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@lru_cache(maxsize=1)
def residuals() -> dict:
    """{arch: {point id: {"predicted": x, "published": y, "error": e, "metric": m, "use": u}}}."""
    if not RESIDUALS_JSON.exists():
        return {}
    return json.loads(RESIDUALS_JSON.read_text())


def error_band(arch: str) -> tuple[float, float] | None:
    """(lowest, highest) signed relative error of ``arch``'s throughput calibration points
    (predicted / published - 1, over the rows used to fit or check), e.g. (-0.2, 0.15): a
    prediction is expected within [published x (1 + lo), published x (1 + hi)]. None when the
    platform has no throughput points."""
    rows = residuals().get(arch, {})
    errors = [
        r["error"]
        for r in rows.values()
        if r.get("metric") in ("samples_per_s", "tokens_per_s")
        and r.get("use") != "excluded"
        and r.get("error") is not None
    ]
    if not errors:
        return None
    return (min(errors), max(errors))


def run_tags(arch: str, constants: str = "published", rc=None) -> dict[str, str]:
    """The tags a predicted run records: ``dabench.model_version``, ``dabench.error_band`` (the
    in-sample range "-0.12,+0.08", or "uncalibrated"), and the band's
    (:func:`dabench.perfmodel.fit.constant_set.band_tags`: ``dabench.constants``, ``dabench.band``,
    ``dabench.band.nominal_coverage``) of the constant set ``constants`` (``hardware.constants``:
    published, a NAME or a FILE; docs/fitting.md)."""
    from dabench.perfmodel.fit.constant_set import band_tags, resolve

    band = error_band(arch)
    try:
        constant_set = resolve(constants)
    except (OSError, ValueError) as error:
        raise ConfigError("hardware.constants", constants, str(error)) from None
    name = constant_set.get("name", constants) if constants != "published" else constants
    x, nominal = None, None
    if rc is not None:
        from dabench.perfmodel.fit.reach import coords

        x, nominal = coords(rc), rc.band.nominal
    tags = {
        "dabench.model_version": model_version(arch),
        "dabench.error_band": f"{band[0]:+.3f},{band[1]:+.3f}" if band else "uncalibrated",
        **band_tags(arch, model_version(arch), constant_set, name, x, nominal),
    }
    if constants != "published":
        tags["dabench.constants_ref"] = constants  # as given: a NAME or a FILE
        if rc is not None:
            from dabench.perfmodel.fit.constant_set import outside_domain

            note = outside_domain(constant_set, arch, rc)
            if note:
                tags["dabench.constants_note"] = note
    return tags
