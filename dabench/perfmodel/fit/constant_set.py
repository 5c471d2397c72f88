"""Constant sets: the constants a prediction was made with, their out-of-sample residuals, and the
band every predicted number gets from them.

A set is one versioned JSON file (``"format": "dabench-constant-set"``, ``format_version``; the
shipped one is ``published.json`` beside this module). Readers ignore unknown keys; an incompatible
change raises ``format_version``. A band is ``[value / factor, value * factor]``, the
split-conformal interval of :mod:`.cv`. :func:`band` and :func:`band_metrics` are pure; :func:`load`
reads a set once per process.

Details: docs/perfmodel.md, "Out-of-sample error and bands" (the format).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from dabench.perfmodel.fit import reach
from dabench.perfmodel.fit.cv import MEASURES, NOMINAL, needs, summary, wide_score
from dabench.perfmodel.fit.points import load_points
from dabench.perfmodel.fit.sources import constant_paths, hardware_yaml, load_sources, read_from_calibration
from dabench.runtime.readers import read_constant_set
from dabench.runtime.sinks import write_json

FORMAT, FORMAT_VERSION = "dabench-constant-set", 1
DIR = Path(__file__).parent
PUBLISHED = "published"
#: the predicted numbers that get a band: (metric name) -> whether the band divides (times) or
#: multiplies (rates); both use the same factor
BANDED = ("throughput.samples_per_s", "throughput.tokens_per_s", "step_time.median_s")
BAND_METHOD = (
    "leave-one-source-out: a platform's throughput points, each predicted by constants refitted without "
    "its source; a prediction's band is the larger of the split-conformal quantile of those "
    "|log(predicted / published)| and its nearest calibration point's own, plus a growth per unit of "
    "distance from that point (model size, chips, precision, compile and execution mode, release, GPU "
    "generation: dabench/perfmodel/fit/reach.py); nothing calibrated nearby: 'wide', and it says so"
)


def user_dir() -> Path:
    """Where named sets written by ``dabench fit --from-mlflow`` live: ``$DABENCH_CONSTANTS_DIR``,
    else ``~/.dabench/constants`` (never beside published.json: docs/fitting.md)."""
    import os

    return Path(os.environ.get("DABENCH_CONSTANTS_DIR") or Path.home() / ".dabench" / "constants").expanduser()


def is_file_ref(name: str) -> bool:
    """``hardware.constants`` names a file (a path, or a name ending in .json) rather than a set."""
    return name.endswith(".json") or "/" in name or "\\" in name


def path_of(name: str) -> Path:
    """The file of set ``name``: a path as given; ``published`` (and the sets shipped beside it)
    here; any other NAME in :func:`user_dir`."""
    if is_file_ref(name):
        return Path(name).expanduser()
    shipped = DIR / f"{name}.json"
    if name == PUBLISHED or (shipped.exists() and not (user_dir() / f"{name}.json").exists()):
        return shipped
    return user_dir() / f"{name}.json"


def resolve(name: str) -> Mapping[str, Any]:
    """:func:`load`, but a set other than ``published`` that does not exist is an error (a
    prediction must not silently fall back on other constants)."""
    data = load(name)
    if not data and name != PUBLISHED:
        raise FileNotFoundError(
            f"no constant set {name!r} (looked for {path_of(name)}; named sets live in "
            f"{user_dir()}, written by python -m dabench fit --from-mlflow ... --name NAME)"
        )
    return data


def fitted_options(name: str, arch: str) -> dict[str, Any]:
    """``{knob: value}`` of the ``options.*`` constants set ``name`` fitted for ``arch`` (what
    ``hardware.constants=NAME|FILE`` applies over conf/hardware/<arch>.yaml's options); {} for
    ``published``, whose values are the YAML's."""
    if name == PUBLISHED:
        return {}
    entry = (resolve(name).get("platforms") or {}).get(arch) or {}
    return {
        path.split(".", 1)[1]: c["value"]
        for path, c in (entry.get("constants") or {}).items()
        if path.startswith("options.") and c.get("kind") == "fitted" and c.get("value") is not None
    }


def load(name: str = PUBLISHED) -> Mapping[str, Any]:
    """The constant set ``name`` (a NAME or a FILE, see :func:`path_of`; {} when it does not
    exist). Read once per process and file."""
    return _load(str(path_of(name)))


@lru_cache(maxsize=None)
def _load(where: str) -> Mapping[str, Any]:
    try:
        return read_constant_set(where, FORMAT, FORMAT_VERSION)  # damage: DamagedFile, one line
    except FileNotFoundError:
        return {}


def header(name: str, nominal: float, band_method: str = BAND_METHOD) -> dict[str, Any]:
    """The fields every constant set opens with: format, version, name, creation time, dabench
    version, nominal band coverage and the band method."""
    import dabench

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "created": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "dabench_version": dabench.__version__,
        "nominal_coverage": nominal,
        "band_method": band_method,
    }


def platform_band(platform: str, constant_set: Mapping[str, Any]) -> Mapping[str, Any]:
    """The platform's band record; ``{"kind": "uncalibrated", ...}`` when the set has none."""
    entry = (constant_set.get("platforms") or {}).get(platform) or {}
    return entry.get("band") or {"kind": "uncalibrated", "note": f"no calibration points for {platform}"}


_GROWTH: dict[tuple[int, float], tuple[Mapping[str, Any], float]] = {}


def half_width(
    platform: str, constant_set: Mapping[str, Any], x: Mapping[str, Any] | None = None, nominal: float | None = None
) -> tuple[str, float | None, str]:
    """(kind, log half-width, why) of the band of a prediction of ``platform`` at reach
    coordinates ``x`` (:func:`dabench.perfmodel.fit.reach.coords`); without ``x``, at the
    calibration itself. A set fitted from runs keeps its one factor per platform."""

    record = platform_band(platform, constant_set)
    if "points" not in record:  # one factor per platform (sets fitted from runs)
        factor = record.get("factor")
        if record.get("kind") not in ("conformal", "wide") or not factor:
            return record.get("kind", "uncalibrated"), None, record.get("note", "")
        return record["kind"], math.log(factor), record.get("note", "")
    nominal = float(constant_set.get("nominal_coverage") or 0.8) if nominal is None else nominal
    bands = constant_set.get("bands") or {}
    cached = _GROWTH.get((id(bands), nominal))
    if cached is None or cached[0] is not bands:  # once per set and nominal (the set is held: its id stays its own)
        cached = (bands, reach.growth([math.inf if n is None else n for n in bands.get("needs") or ()], nominal))
        _GROWTH[(id(bands), nominal)] = cached
    rate = cached[1]
    wide = float(bands.get("wide") or math.log(2.0))
    points = [p if p["score"] is not None else {**p, "score": math.inf} for p in record["points"]]
    if x is None:
        q = reach.conformal_q([p["score"] for p in points], nominal) if points else None
        base = q if q is not None and math.isfinite(q) else wide + rate * reach.FAR
        return ("near" if points else "wide"), base, record.get("note", "")
    return reach.half_width(x, points, wide, rate, nominal)


def band(
    platform: str,
    value: float,
    constant_set: Mapping[str, Any],
    x: Mapping[str, Any] | None = None,
    nominal: float | None = None,
) -> tuple[float, float] | None:
    """(lo, hi) around a predicted positive ``value`` of ``platform`` (see :func:`half_width`);
    None when the set gives no band or the value is not a positive finite number."""
    if not math.isfinite(value) or value <= 0:
        return None
    _, q, _ = half_width(platform, constant_set, x, nominal)
    if q is None or not math.isfinite(q):
        return None
    return (value / math.exp(q), value * math.exp(q))


def band_metrics(
    platform: str,
    metrics: Mapping[str, float],
    constant_set: Mapping[str, Any] | None = None,
    x: Mapping[str, Any] | None = None,
    nominal: float | None = None,
) -> dict[str, float]:
    """``<name>.lo`` and ``<name>.hi`` for each banded predicted number in ``metrics``: the main
    names of a predicted run, the ``predict.`` names of a validate run. {} without a band."""
    constant_set = load() if constant_set is None else constant_set
    out: dict[str, float] = {}
    prefix = "predict." if "predict.throughput.samples_per_s" in metrics else ""  # validate: main names are measured
    _, q, _ = half_width(platform, constant_set, x, nominal)
    if q is None or not math.isfinite(q):
        return out
    for name in BANDED:
        value = metrics.get(prefix + name)
        if value is not None and math.isfinite(value) and value > 0:
            out[f"{prefix}{name}.lo"], out[f"{prefix}{name}.hi"] = value / math.exp(q), value * math.exp(q)
    return out


def band_tags(
    platform: str,
    model_hash: str,
    constant_set: Mapping[str, Any] | None = None,
    name: str = PUBLISHED,
    x: Mapping[str, Any] | None = None,
    nominal: float | None = None,
) -> dict[str, str]:
    """``dabench.constants``, ``dabench.band`` (kind and how it is sized, at reach coordinates
    ``x``), ``dabench.band.nominal_coverage``, and ``dabench.band_note`` when the set was sized on
    another model version than ``model_hash``."""
    constant_set = load(name) if constant_set is None else constant_set
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
    """Where ``rc`` lies outside the configs a set fitted from runs saw (its platform's
    ``domain``: ranges of layers, hidden size, sequence, batch, parameters; precisions and
    layouts); "" inside, or for a set without a domain. A set is as good as the configs it saw."""
    domain = ((constant_set.get("platforms") or {}).get(platform) or {}).get("domain") or {}
    found = []
    values = {
        "n_layers": rc.model.n_layers,
        "hidden_size": rc.model.hidden_size,
        "seq_len": rc.model.seq_len,
        "batch_size": rc.run.batch_size,
    }
    for key, value in values.items():
        span = domain.get(key)
        if span and not (span[0] <= value <= span[1]):
            found.append(f"{key} {value} outside [{span[0]:g}, {span[1]:g}]")
    if domain.get("precisions") and rc.precision.name not in domain["precisions"]:
        found.append(f"precision {rc.precision.name} not in {', '.join(domain['precisions'])}")
    if domain.get("hardware") and rc.hardware.name not in domain["hardware"]:
        found.append(f"hardware {rc.hardware.name} not in {', '.join(domain['hardware'])}")
    if domain.get("strategies") and rc.parallel.strategy not in domain["strategies"]:
        found.append(f"layout {rc.parallel.strategy} not in {', '.join(domain['strategies'])}")
    if not found:
        return ""
    return (
        f"outside the configs constant set '{constant_set.get('name')}' was fitted on ({'; '.join(found)}): "
        f"its band was sized inside them and may not hold here"
    )


def _band_record(kind: str, q: float | None, n: int, rank: int, nominal: float, fallback_n: int) -> dict[str, Any]:
    if kind == "conformal":
        note = (
            f"split-conformal {100 * nominal:.0f}% from {n} out-of-sample residuals "
            f"(rank {rank} of {n}): value / {math.exp(q):.3g} to value x {math.exp(q):.3g}"
        )
    elif kind == "wide":
        note = (
            f"{n} out-of-sample residual(s), too few for a {100 * nominal:.0f}% split-conformal band (rank {rank} "
            f"> {n}); sized by the largest out-of-sample error of {fallback_n} points of every platform: "
            f"value / {math.exp(q):.3g} to value x {math.exp(q):.3g}"
        )
    elif kind == "unbounded":
        note = "the conformal rank falls on a refused prediction: no finite band"
    else:
        note = "no calibration points"
    record: dict[str, Any] = {"kind": kind, "n": n, "rank": rank, "nominal_coverage": nominal, "note": note}
    if q is not None:
        record.update(log_half_width=round(q, 6), factor=round(math.exp(q), 6))
    return record


def constant_records(arch: str, unsourced: str) -> dict[str, dict[str, Any]]:
    """Each constant of ``arch``'s hardware config, by dotted path: its value and kind from the
    source registry (``unsourced`` where the registry has no entry); a fitted one's bounds and points,
    any other's document, locator and reason."""

    sources = load_sources(arch)
    constants = {}
    for path, value in constant_paths(hardware_yaml(arch)):
        entry = sources.get(path)
        record: dict[str, Any] = {"value": value, "kind": entry.kind if entry else unsourced}
        if entry is not None and entry.kind == "fitted":
            record.update(bounds=list(entry.bounds) if entry.bounds else None, points=list(entry.points))
        elif entry is not None:
            record.update({k: getattr(entry, k) for k in ("document", "locator", "reason") if getattr(entry, k)})
        constants[path] = record
    return constants


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else (round(value, 6) if math.isfinite(value) else None)


def _reach_record(cv, nominal: float, wide: float) -> dict[str, Any]:
    """A platform's band table: its throughput points' reach coordinates and out-of-source scores."""

    points = [
        {"id": r.point.id, "coords": r.coords, "score": r.score if math.isfinite(r.score) else math.inf}
        for r in (cv.banded if cv else ())
    ]
    q = reach.conformal_q([p["score"] for p in points], nominal) if points else None
    record: dict[str, Any] = {"kind": "near" if points else "wide", "n": len(points), "nominal_coverage": nominal}
    if q is not None and math.isfinite(q):
        record.update(log_half_width=round(q, 6), factor=round(math.exp(q), 6))
        record["note"] = (
            f"{100 * nominal:.0f}% from {len(points)} out-of-source errors: value / {math.exp(q):.3g} to "
            f"value x {math.exp(q):.3g} at a calibration point, wider with distance from it"
        )
    elif points:
        record["note"] = f"{len(points)} out-of-source errors, too few for a {100 * nominal:.0f}% quantile: wide"
    else:
        record.update(log_half_width=round(wide, 6), factor=round(math.exp(wide), 6))
        record["note"] = (
            f"nothing calibrated on this platform: at least value / {math.exp(wide):.3g} to "
            f"value x {math.exp(wide):.3g}, wider with reach"
        )
    record["points"] = [{**p, "score": None if not math.isfinite(p["score"]) else round(p["score"], 6)} for p in points]
    return record


def build(
    results: list, coverage, archs: list[str], name: str = PUBLISHED, nominal: float | None = None
) -> dict[str, Any]:
    """A constant set (the format above) from :func:`dabench.perfmodel.fit.cv.cross_validate`
    results, their :func:`~dabench.perfmodel.fit.cv.nested_coverage`, and every hardware config
    in ``archs`` (those without points get a ``wide`` band that says so)."""
    from dabench.perfmodel.fit import model_version

    nominal = NOMINAL if nominal is None else nominal
    by_arch = {r.arch: r for r in results}
    pooled_out = [e for r in results for e in r.abs_errors("out")]
    wide = wide_score(results)
    platforms: dict[str, Any] = {}
    for arch in archs:
        constants = constant_records(arch, "missing")
        cv = by_arch.get(arch)
        entry_out: dict[str, Any] = {
            "model_hash": model_version(arch),
            "calibration_points": sum(1 for p in load_points() if p.platform == arch),
            "throughput_points": len(cv.banded) if cv else 0,
            "fitted_constants": sum(1 for c in constants.values() if c["kind"] == "fitted"),
            "constants": constants,
            "band": _reach_record(cv, nominal, wide),
        }
        if cv is not None and cv.rows:
            entry_out["residuals"] = [
                {
                    "point": r.point.id,
                    "metric": r.point.metric,
                    "measure": MEASURES[r.point.metric],
                    "source": r.point.source_key,
                    "use": r.point.use,
                    "published": r.point.published,
                    "in_sample": _num(r.in_sample),
                    "out_of_sample": _num(r.out_of_sample),
                    "error": _num(r.score) if math.isfinite(r.score) else None,
                    "left_out": r.left_out,
                    "band": _num(r.band) if r.band is not None else None,
                    "covered": r.covered,
                }
                for r in cv.rows
            ]
            med_in, max_in = summary(cv.abs_errors("in"))
            med_out, max_out = summary(cv.abs_errors("out"))
            k, n, interval = coverage.per_platform.get(arch, (0, 0, (0.0, 1.0)))
            entry_out["summary"] = {
                "in_sample_median_abs_error": _num(med_in),
                "in_sample_max_abs_error": _num(max_in),
                "out_of_sample_median_abs_error": _num(med_out),
                "out_of_sample_max_abs_error": _num(max_out),
                "covered": k,
                "banded": n,
                "binomial_95": [_num(interval[0]), _num(interval[1])],
            }
            entry_out["sources"] = {key: ids for key, ids in cv.sources.items()}
            entry_out["read_from_calibration"] = read_from_calibration(arch)
        platforms[arch] = entry_out
    med, worst = summary(pooled_out)
    return {
        **header(name, nominal),
        "bands": {  # the growth's needs per throughput point (null: infinite) and the wide fallback
            "wide": round(wide, 6),
            "needs": [round(v, 6) if math.isfinite(v) else None for v in sorted(needs(results, nominal).values())],
        },
        "platforms": platforms,
        "cv": {
            "points": sum(len(r.rows) for r in results),
            "banded": coverage.n,
            "sources": sum(len(r.sources) for r in results),
            "covered": coverage.covered,
            "coverage": _num(coverage.rate),
            "coverage_min_platform": _num(coverage.min_platform()),
            "binomial_95": [_num(coverage.interval[0]), _num(coverage.interval[1])],
            "out_of_sample_median_abs_error": _num(med),
            "out_of_sample_max_abs_error": _num(worst) if math.isfinite(worst) else "inf",
        },
    }


def write(data: Mapping[str, Any], name: str | None = None) -> Path:
    name = name or data["name"]
    path = DIR / f"{name}.json" if name == PUBLISHED else path_of(name)

    write_json("source_tree", path, data, indent=1, sort_keys=False)
    _load.cache_clear()
    return path


def format_problems(data: Mapping[str, Any]) -> list[str]:
    """Everything that breaks the documented format (empty when the set is well formed)."""
    found = []
    for key in (
        "format",
        "format_version",
        "name",
        "created",
        "dabench_version",
        "nominal_coverage",
        "platforms",
        "cv",
    ):
        if key not in data:
            found.append(f"missing {key}")
    if data.get("format") != FORMAT:
        found.append(f"format is {data.get('format')!r}, not {FORMAT!r}")
    for arch, entry in (data.get("platforms") or {}).items():
        for key in ("model_hash", "constants", "band", "calibration_points", "fitted_constants"):
            if key not in entry:
                found.append(f"{arch}: missing {key}")
        for path, c in (entry.get("constants") or {}).items():
            if c.get("kind") not in ("source", "uncertain", "fitted", "setting"):
                found.append(f"{arch}: {path}: kind {c.get('kind')!r}")
            if c.get("kind") == "fitted" and not (c.get("bounds") and c.get("points")):
                found.append(f"{arch}: {path}: fitted without bounds and points")
            if c.get("kind") == "source" and not (c.get("document") and c.get("locator")):
                found.append(f"{arch}: {path}: source without document and locator")
        kind = (entry.get("band") or {}).get("kind")
        if kind not in ("near", "conformal", "wide", "uncalibrated", "unbounded"):
            found.append(f"{arch}: band kind {kind!r}")
        if kind in ("near", "conformal") and not entry.get("residuals"):
            found.append(f"{arch}: a {kind} band without residuals")
    return found
