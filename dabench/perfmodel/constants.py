"""Constant sets at run time: the format's one reader and writer (:class:`ConstantSet`), the
constants a prediction uses and the band it gets (:func:`model_version`, :func:`run_tags`,
:func:`load`, :func:`fitted_options`, :func:`band`). Building sets is dabench/fit/. Format and
bands: docs/perfmodel.md, "Out-of-sample error and bands", and docs/fitting.md.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from dabench.config.paths import CONF_DIR
from dabench.config.sections import FP8
from dabench.core.platforms import platform as platform_of
from dabench.core.readers import DamagedFile, finite, is_number, mapping, read_json, safe_yaml
from dabench.core.status import ConfigError
from dabench.perfmodel import reach
from dabench.perfmodel.reach import coords
from dabench.runtime.sinks import locked, write_json

PACKAGE = Path(__file__).resolve().parents[1]  # dabench/
ROOT = PACKAGE.parent
DIR = PACKAGE / "fit"  #: where the shipped sets (published.json) and residuals.json live
RESIDUALS_JSON = DIR / "residuals.json"
FORMAT, FORMAT_VERSION = "dabench-constant-set", 1
PUBLISHED = "published"
#: the predicted numbers that get a band (rates and times use the same factor)
MAX_BAND_FACTOR = 1e3  #: a band wider than x1000 either way says nothing (and overflows products)
BANDED = ("throughput.samples_per_s", "throughput.tokens_per_s", "step_time.median_s")


#: files whose content decides a prediction (code constants and fitted parameters)
_COMMON = (
    "dabench/perfmodel/assemble.py",
    "dabench/perfmodel/capacity.py",
    "dabench/perfmodel/comm.py",
    "dabench/perfmodel/device.py",  # the roofline device model of cpu and cuda
    "dabench/perfmodel/device_memory.py",
    "dabench/perfmodel/pipeline.py",
    "dabench/perfmodel/knobs/__init__.py",
    "dabench/workload/opgraph.py",
    "dabench/metrics/summary.py",
)


def _model_files(arch: str) -> list[Path]:
    files = [ROOT / name for name in _COMMON]
    predict = platform_of(arch).predict
    if predict is not None:  # its platform folder: model, knobs (dabench/platforms/<family>/)
        files += sorted(Path(sys.modules[predict.__module__].__file__ or "").parent.glob("*.py"))
    # its preset and the presets that inherit its options (conf/hardware/b200.yaml: defaults [cuda])
    return files + [path for path in sorted((CONF_DIR / "hardware").glob("*.yaml")) if _presets_of(path, arch)]


def _presets_of(path: Path, arch: str) -> bool:
    return path.stem == arch or arch in ((safe_yaml(path.read_text(encoding="utf-8")) or {}).get("defaults") or ())


class _NoDocstrings(ast.NodeTransformer):
    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:  # a bare string: a docstring, never code
        return None if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) else node


def _meaning(path: Path) -> bytes:
    """What in ``path`` can change a prediction: Python as its syntax tree without docstrings
    (comments, layout and line numbers are not in it), YAML as its parsed values."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return ast.dump(_NoDocstrings().visit(ast.parse(text))).encode()
    return json.dumps(safe_yaml(text), sort_keys=True, default=str).encode()


@lru_cache(maxsize=None)
def model_version(arch: str) -> str:
    """12 hex digits of a SHA-256 over the meaning (:func:`_meaning`) of ``arch``'s model code,
    the op graph, the metrics and conf/hardware/<arch>.yaml: editing prose or
    moving a file leaves it as it is."""
    # by content, not by name or place: moving a file leaves it as it is
    parts = sorted(hashlib.sha256(_meaning(path)).digest() for path in set(_model_files(arch)) if path.exists())
    return hashlib.sha256(b"".join(parts)).hexdigest()[:12]


@lru_cache(maxsize=1)
def residuals() -> dict:
    """{arch: {point id: {"predicted": x, "published": y, "error": e, "metric": m, "use": u}}}."""
    if not RESIDUALS_JSON.exists():
        return {}
    return json.loads(RESIDUALS_JSON.read_text())


def error_band(arch: str) -> tuple[float, float] | None:
    """(lowest, highest) signed relative error of ``arch``'s fit and check throughput points; None
    without any."""
    rows = residuals().get(arch, {})
    errors = [
        r["error"]
        for r in rows.values()
        if r.get("metric") in ("samples_per_s", "tokens_per_s")
        and r.get("use") != "excluded"
        and r.get("error") is not None
    ]
    return (min(errors), max(errors)) if errors else None


def user_dir() -> Path:
    """Where named sets live: ``$DABENCH_CONSTANTS_DIR``, else ``~/.dabench/constants``."""
    return Path(os.environ.get("DABENCH_CONSTANTS_DIR") or Path.home() / ".dabench" / "constants").expanduser()


def is_file_ref(name: str) -> bool:
    """``hardware.constants`` names a file (a path, or a name ending in .json) rather than a set."""
    return name.endswith(".json") or "/" in name or "\\" in name


def path_of(name: str) -> Path:
    """The file of set ``name``: a path as given, a shipped set here, any other in :func:`user_dir`."""
    if is_file_ref(name):
        return Path(name).expanduser()
    shipped = DIR / f"{name}.json"
    if name == PUBLISHED or (shipped.exists() and not (user_dir() / f"{name}.json").exists()):
        return shipped
    return user_dir() / f"{name}.json"


def resolve(name: str) -> Mapping[str, Any]:
    """:func:`load`, but a missing set other than ``published`` is an error."""
    data = load(name)
    if not data and name != PUBLISHED:
        raise FileNotFoundError(
            f"no constant set {name!r} (looked for {path_of(name)}; named sets live in "
            f"{user_dir()}, written by python -m dabench fit --from-mlflow ... --name NAME)"
        )
    return data


def fitted_options(name: str, arch: str) -> dict[str, Any]:
    """``{knob: value}`` of the options set ``name`` fitted for ``arch``; {} for ``published``."""
    if name == PUBLISHED:
        return {}
    entry = (resolve(name).get("platforms") or {}).get(arch) or {}
    return {
        path.split(".", 1)[1]: c["value"]
        for path, c in (entry.get("constants") or {}).items()
        if path.startswith("options.") and c.get("kind") == "fitted" and c.get("value") is not None
    }


def load(name: str = PUBLISHED) -> Mapping[str, Any]:
    """The constant set ``name`` (a NAME or a FILE; {} when missing), read once per process."""
    return _load(str(path_of(name)))


@lru_cache(maxsize=None)
def _load(where: str) -> Mapping[str, Any]:
    try:
        return ConstantSet.read(where)  # damage: DamagedFile, one line
    except FileNotFoundError:
        return {}


class ConstantSet:
    """The constant-set format (docs/fitting.md), read and written here only: :meth:`read` is the
    guarded reader (DamagedFile: one line), :meth:`write` replaces a set whole under its lock;
    dabench/fit/constant_set.py builds the sets."""

    @staticmethod
    def read(path: Path | str) -> dict:
        """The set in ``path``: format and version known, every number finite and in range."""
        data = mapping(path, read_json(path, 16 * 2**20))
        if data.get("format") != FORMAT or not isinstance(data.get("format_version"), int):
            raise DamagedFile(path, f"not a {FORMAT} (format {str(data.get('format'))[:40]!r})")
        if not 1 <= data["format_version"] <= FORMAT_VERSION:  # the newest this dabench reads
            raise DamagedFile(path, f"format_version={data['format_version']}: this dabench reads 1..{FORMAT_VERSION}")
        if "nominal_coverage" in data:
            coverage = finite(path, data["nominal_coverage"], "nominal_coverage", positive=True)
            if coverage > 1:
                raise DamagedFile(path, f"nominal_coverage={coverage:g}: must be <= 1")
        for arch, entry in mapping(path, data.get("platforms") or {}, "platforms").items():
            entry = mapping(path, entry, f"platforms.{arch}")
            for name, constant in mapping(path, entry.get("constants") or {}, f"platforms.{arch}.constants").items():
                where = f"platforms.{arch}.constants.{name}"
                constant = mapping(path, constant, where)
                value = constant.get("value")
                if constant.get("kind") == "fitted" and value is not None:
                    finite(path, value, f"{where}.value", positive=True)
                elif is_number(value):
                    finite(path, value, f"{where}.value")
            band = mapping(path, entry.get("band") or {}, f"platforms.{arch}.band")
            if band.get("kind") in ("conformal", "wide", "near"):
                finite(path, band.get("factor"), f"platforms.{arch}.band.factor", low=1.0, high=MAX_BAND_FACTOR)
            ConstantSet._band_points(path, band, f"platforms.{arch}.band")
        bands = mapping(path, data.get("bands") or {}, "bands")
        finite(path, bands.get("wide", 0.0), "bands.wide", low=0.0, high=math.log(MAX_BAND_FACTOR))
        if not isinstance(bands.get("needs", []), list):
            raise DamagedFile(path, "bands.needs is not a list")
        for i, need in enumerate(bands.get("needs", [])):
            if need is not None:
                finite(path, need, f"bands.needs[{i}]", low=0.0, high=10.0)
        return data

    @staticmethod
    def _band_points(path: Path | str, band: dict, where: str) -> None:
        """A band's calibration points (perfmodel/reach.py): id, reach coordinates, score >= 0 or null."""
        if "points" not in band:
            return
        if not isinstance(band["points"], list):
            raise DamagedFile(path, f"{where}.points is not a list")
        for i, point in enumerate(band["points"]):
            point = mapping(path, point, f"{where}.points[{i}]")
            coords = mapping(path, point.get("coords"), f"{where}.points[{i}].coords")
            for key, high in (("size", 20.0), ("chips", 30.0)):  # log10 parameters, log2 chips
                finite(path, coords.get(key), f"{where}.points[{i}].coords.{key}", low=0.0, high=high)
            for key in reach.CATEGORIES:
                if not isinstance(coords.get(key), str):
                    raise DamagedFile(path, f"{where}.points[{i}].coords.{key} is not text")
            if not isinstance(point.get("id"), str):
                raise DamagedFile(path, f"{where}.points[{i}].id is not text")
            if point.get("score", 0.0) is not None or "score" not in point:
                finite(path, point.get("score"), f"{where}.points[{i}].score", low=0.0, high=50.0)

    @staticmethod
    def write(data: Mapping[str, Any], path: Path) -> Path:
        """``data`` into ``path``, replaced whole under its lock (two fits that meet take turns)."""
        with locked("source_tree", path):
            write_json("source_tree", path, data, indent=1, sort_keys=False)
        _load.cache_clear()
        return path


def half_width(
    platform: str, constant_set: Mapping[str, Any], x: Mapping[str, Any] | None = None, nominal: float | None = None
) -> tuple[str, float | None, str]:
    """(kind, log half-width, why) of the band of ``platform`` at reach coordinates ``x`` (None:
    at the calibration)."""

    entry = (constant_set.get("platforms") or {}).get(platform) or {}
    record = entry.get("band") or {"kind": "uncalibrated", "note": f"no calibration points for {platform}"}
    if "points" not in record:  # one factor per platform (sets fitted from runs)
        factor = record.get("factor")
        if record.get("kind") not in ("conformal", "wide") or not factor:
            return record.get("kind", "uncalibrated"), None, record.get("note", "")
        return record["kind"], math.log(factor), record.get("note", "")
    nominal = float(constant_set.get("nominal_coverage") or 0.8) if nominal is None else nominal
    bands = constant_set.get("bands") or {}
    rate = reach.growth([math.inf if n is None else n for n in bands.get("needs") or ()], nominal)
    wide = float(bands.get("wide") or math.log(2.0))
    points = [p if p["score"] is not None else {**p, "score": math.inf} for p in record["points"]]
    evidence = "out-of-source errors"
    if not points and platform_of(platform).host_cpu:  # priced at this machine's calibration: validate errors
        from dabench.host import validation

        points, evidence = _validate_errors(model_version(platform), nominal)
        if points:
            record = {**record, "note": f"{100 * nominal:.0f}% band from {len(points)} {evidence}"}
            x = None if x is None else {**x, "machine": validation.machine()}
    if x is None:
        q = reach.conformal_q([p["score"] for p in points], nominal) if points else None
        base = q if q is not None and math.isfinite(q) else wide + rate * reach.FAR
        return ("near" if points else "wide"), base, record.get("note", "")
    kind, q, why = reach.half_width(x, points, wide, rate, nominal, evidence)
    if x.get("silicon") and x["silicon"] not in _point_generations(constant_set, platform, points):
        # a chip generation with no calibration point: whatever its distance, nothing calibrated is near
        why = f"nothing calibrated nearby: no calibration point of generation {x['silicon']}; {why}"
        return "wide", max(q, wide + rate * reach.FAR), why
    if x.get("precision") == FP8 and all(p["coords"].get("precision") != FP8 for p in points):
        # FP8 GEMMs: a number format, scaling and casts no calibration point ran
        why = f"nothing calibrated nearby: no calibration point runs precision=fp8; {why}"
        return "wide", max(q, wide + rate * reach.FAR), why
    return kind, q, why


def _validate_errors(model_hash: str, nominal: float) -> tuple[list[dict[str, Any]], str]:
    """(band points, what they are) of the CPU model ``model_hash``: this machine's validate errors
    once they give a quantile at ``nominal``, else the shipped CPU validation grid's; each point's
    ``machine`` coordinate says where it was measured (docs/perfmodel.md, "Out-of-sample error and bands")."""
    from dabench.host import validation

    here = validation.machine()
    mine = [{**p, "coords": {**p["coords"], "machine": here}} for p in validation.points(model_hash)]
    if reach.conformal_q([p["score"] for p in mine], nominal) is not None:
        return mine, f"errors of {validation.SOURCE} ({validation.path()})"
    grid, record = validation.shipped()
    other = "" if record.get("model") == model_hash else f", model {record.get('model')} (this one: {model_hash})"
    return grid, (
        f"errors of {validation.GRID} on {record.get('machine')} ({record.get('measured')}{other}; "
        f"{len(mine)} validate runs here so far; {validation.SHIPPED.name} in dabench/platforms/cpu/)"
    )


def validate_point(rc: Any, metrics: Mapping[str, float]) -> dict[str, Any]:
    """The band point of an ok validate run of ``rc``: its label, reach coordinates and score."""
    error = metrics.get("predict.rel_error.samples_per_s", math.nan)
    return {
        "id": f"{rc.model.n_layers}x{rc.model.hidden_size} batch {rc.run.batch_size} {rc.precision.name}",
        "coords": coords(rc),
        "score": round(abs(math.log1p(error)), 6) if error > -1 else math.nan,
    }


def _point_generations(constant_set: Mapping[str, Any], platform: str, points: list) -> set[str]:
    """The chip generations (``options.generation`` of each point's preset, else of ``platform``'s
    own preset, as the set recorded them) of a band's calibration points."""
    entries = constant_set.get("platforms") or {}

    def generation(preset: str) -> str:
        for name in (preset, platform):
            setting = ((entries.get(name) or {}).get("constants") or {}).get("options.generation") or {}
            if setting.get("value"):
                return str(setting["value"])
        return ""

    return {generation(p["coords"].get("generation", "")) for p in points}


def band(
    platform: str,
    value: float,
    constant_set: Mapping[str, Any],
    x: Mapping[str, Any] | None = None,
    nominal: float | None = None,
) -> tuple[float, float] | None:
    """(lo, hi) around a positive predicted ``value``; None without a band or such a value."""
    return _around(value, half_width(platform, constant_set, x, nominal)[1])


def _around(value: float | None, q: float | None) -> tuple[float, float] | None:
    """(lo, hi) of a positive finite ``value`` at log half-width ``q``; None without either."""
    if value is None or q is None or not (math.isfinite(value) and value > 0 and math.isfinite(q)):
        return None
    return (value / math.exp(q), value * math.exp(q))


def band_metrics(
    platform: str,
    metrics: Mapping[str, float],
    constant_set: Mapping[str, Any],
    x: Mapping[str, Any] | None = None,
    nominal: float | None = None,
) -> dict[str, float]:
    """``<name>.lo`` / ``<name>.hi`` of each banded number in ``metrics``; {} without a band."""
    out: dict[str, float] = {}
    prefix = "predict." if "predict.throughput.samples_per_s" in metrics else ""  # validate: main names are measured
    q = half_width(platform, constant_set, x, nominal)[1]
    for name in BANDED:
        ends = _around(metrics.get(prefix + name), q)
        if ends:
            out[f"{prefix}{name}.lo"], out[f"{prefix}{name}.hi"] = ends
    return out


def band_tags(
    platform: str,
    model_hash: str,
    constant_set: Mapping[str, Any],
    name: str = PUBLISHED,
    x: Mapping[str, Any] | None = None,
    nominal: float | None = None,
) -> dict[str, str]:
    """The band's tags, with ``dabench.band_note`` when the set was sized on another model version."""
    kind, q, why = half_width(platform, constant_set, x, nominal)
    width = f"value / {math.exp(q):.3g} to value x {math.exp(q):.3g}; " if q is not None and math.isfinite(q) else ""
    tags = {
        "dabench.constants": name if constant_set else "none",
        "dabench.band": f"{kind}: {width}{why}".strip(": "),
    }
    if q is not None and math.isfinite(q):
        level = nominal if nominal is not None else constant_set.get("nominal_coverage")
        tags["dabench.band.nominal_coverage"] = f"{level}"
    sized_on = ((constant_set.get("platforms") or {}).get(platform) or {}).get("model_hash")
    if sized_on and sized_on != model_hash:
        refit = (
            "python -m dabench fit --cv --write"
            if name == PUBLISHED
            else f"refit it from its runs: python -m dabench fit --from-mlflow SELECTION --name {name}"
        )
        tags["dabench.band_note"] = (
            f"constant set '{name}' was sized on model {sized_on}; this model is {model_hash}: {refit}"
        )
    return tags


def outside_domain(constant_set: Mapping[str, Any], platform: str, rc: Any) -> str:
    """Where ``rc`` lies outside the configs a set fitted from runs saw; "" inside (or no domain)."""
    domain = ((constant_set.get("platforms") or {}).get(platform) or {}).get("domain") or {}
    #: domain key -> the run's value: a [low, high] span of numbers, or a list of names (with their label)
    spans = {
        "n_layers": rc.model.n_layers,
        "hidden_size": rc.model.hidden_size,
        "seq_len": rc.model.seq_len,
        "batch_size": rc.run.batch_size,
    }
    lists = {
        "precisions": ("precision", rc.precision.name),
        "hardware": ("hardware", rc.hardware.name),
        "strategies": ("layout", rc.parallel.strategy),
    }
    found = [
        f"{key} {value} outside [{domain[key][0]:g}, {domain[key][1]:g}]"
        for key, value in spans.items()
        if domain.get(key) and not (domain[key][0] <= value <= domain[key][1])
    ]
    found += [
        f"{label} {value} not in {', '.join(domain[key])}"
        for key, (label, value) in lists.items()
        if domain.get(key) and value not in domain[key]
    ]
    if not found:
        return ""
    return (
        f"outside the configs constant set '{constant_set.get('name')}' was fitted on ({'; '.join(found)}): "
        f"its band was sized inside them and may not hold here"
    )


def run_tags(arch: str, constants: str = "published", rc=None) -> dict[str, str]:
    """The tags a predicted run records: model version, in-sample error range and the band's
    (:func:`band_tags`) for constant set ``constants``."""
    band = error_band(arch)
    try:
        constant_set = resolve(constants)
    except (OSError, ValueError) as error:
        raise ConfigError("hardware.constants", constants, str(error)) from None
    name = constant_set.get("name", constants) if constants != "published" else constants
    x, nominal = None, None
    if rc is not None:
        x, nominal = coords(rc), rc.band.nominal
    tags = {
        "dabench.model_version": model_version(arch),
        "dabench.error_band": f"{band[0]:+.3f},{band[1]:+.3f}" if band else "uncalibrated",
        **band_tags(arch, model_version(arch), constant_set, name, x, nominal),
    }
    if constants != "published":
        tags["dabench.constants_ref"] = constants  # as given: a NAME or a FILE
        if rc is not None:
            note = outside_domain(constant_set, arch, rc)
            if note:
                tags["dabench.constants_note"] = note
    return tags
