"""Fit from your own runs: measured runs become calibration points of their platform, and a bounded
least-squares refit of the model's fittable knobs becomes a named constant set.

Pure: the caller (``dabench fit --from-mlflow``) hands over one mapping per run, ``{"run_id",
"tags", "params", "metrics"}`` (MLflow's run data); nothing here touches MLflow or a file.
:func:`points_from_runs` selects the points (each left-out run with its reason), :func:`fit_group`
fits a platform's :func:`fittable` knobs and scores base and fitted constants out of sample beside
:func:`noise_floor`, and :func:`build_set` writes the constant-set format with the fit's own keys.

Details: docs/fitting.md, "What becomes a point", "The fit" and "What a constant set contains".
"""

from __future__ import annotations

import ast
import json
import math
import statistics
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping

from dabench.perfmodel.fit.cv import NOMINAL, band_q, clopper_pearson, conformal_rank, score, summary

#: bounds of the knobs a fit from runs may move, for the models whose shipped values are not
#: fitted to points.csv (cpu: its own-measurement fit; cuda: estimates). Vendor models: their
#: ``fitted`` entries of conf/hardware/sources/<arch>.yaml. Order = priority when points are few.
FIT_BOUNDS: dict[str, dict[str, tuple[float, float]]] = {
    # compute_efficiency is 1.0 by construction on a quiet machine (the calibrated peak is a large
    # matmul's rate); measured runs of a busy or different machine move it too
    "cpu": {
        "launch_s": (1e-6, 1e-3),
        "memory_efficiency": (0.02, 1.0),
        "compute_efficiency": (0.02, 1.0),
        "emulated_compute_efficiency": (0.01, 1.0),
        "emulated_memory_efficiency": (0.01, 1.0),
        "matmul_half_flops": (0.0, 2e8),
    },
    "cuda": {"compute_efficiency": (0.05, 1.0), "memory_efficiency": (0.05, 1.0), "launch_s": (1e-7, 1e-4)},
}
EMULATED = ("emulated_compute_efficiency", "emulated_memory_efficiency")
LOO_MAX = 40  #: configs up to which the out-of-sample score is leave-one-config-out (then 10-fold)
K_FOLD = 10
REFUSED = 10.0  #: residual of a point the model refuses while fitting
#: an ingested vendor artifact's format -> its platform
INGEST_ARCH = {
    "popvision_json": "ipu",
    "sambaflow_compile": "rdu",
    "cerebras_compile_report": "wse2",
    "cerebras_appliance_run": "wse2",
}
#: params that do not change what is measured (left out of a config's identity)
_NOT_IDENTITY = (
    "run.seed",
    "run.warmup_steps",
    "run.timed_steps",
    "run.profile_subtasks",
    "run.plots",
    "run.lr",
    "hardware.mode",
    "hardware.constants",
    "hardware.python",
    "run.allow_oversubscribe",
)
BAND_METHOD = (
    "split-conformal on |log(predicted / measured)| of the fitted set's out-of-sample predictions "
    "(leave one config out, or 10-fold) of the platform's measured runs; fewer than the conformal rank "
    "needs: the largest of them ('wide')"
)


@dataclass
class RunPoint:
    """One measured run as a calibration point."""

    run_id: str
    arch: str
    host_key: str
    hardware: str
    source: str  #: "dabench" (a measured run) or "ingest:<format>"
    samples_per_s: float
    tokens_per_s: float
    step_s: float
    step_p10: float = math.nan
    step_p90: float = math.nan
    class_times: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] | None = None  #: the run's config mapping (None: not recorded)
    key: str = ""  #: the config's identity (repeats of one config share it)
    precision: str = ""
    native: bool = True  #: the precision ran natively (False: emulated on this CPU)
    ceilings: tuple[float, float, str] | None = None  #: (peak FLOP/s, bandwidth B/s, memory level) it ran against
    describe: str = ""
    # filled by prepare(): the built RunConfig, op graph and Ceilings
    rc: Any = None
    graph: Any = None
    roof: Any = None

    @property
    def predictable(self) -> bool:
        return self.rc is not None


@dataclass
class LeftOut:
    run_id: str
    reason: str


def _value(raw: Any) -> Any:
    """A param string back to its value (MLflow stores str(value))."""
    if not isinstance(raw, str):
        return raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw  # a plain string ("none" is a value of some knobs, not None: str(None) is "None")


def unflatten(params: Mapping[str, Any]) -> dict[str, Any]:
    """``{'model.n_layers': '2'}`` -> ``{'model': {'n_layers': 2}}`` (the inverse of config.build.flatten)."""
    out: dict[str, Any] = {}
    for dotted, raw in sorted(params.items()):
        keys = str(dotted).split(".")
        node = out
        for key in keys[:-1]:
            nxt = node.get(key)
            if not isinstance(nxt, dict):
                nxt = node[key] = {}
            node = nxt
        node[keys[-1]] = _value(raw)
    return out


def _num(metrics: Mapping[str, Any], name: str) -> float:
    try:
        value = float(metrics.get(name))
    except (TypeError, ValueError):
        return math.nan
    return value


def config_key(params: Mapping[str, Any], arch: str, host: str) -> str:
    """The identity of a measured config: platform, machine and every param that changes the work."""
    keep = {
        k: str(v)
        for k, v in params.items()
        if k.split(".")[0] in ("model", "precision", "parallel", "run", "hardware")
        and k not in _NOT_IDENTITY
        and not k.startswith(("tracking.", "hardware.options.runner_"))
    }
    return json.dumps([arch, host, sorted(keep.items())])


def _describe(cfg: Mapping[str, Any] | None, arch: str) -> str:
    if not cfg:
        return arch
    model, run = cfg.get("model") or {}, cfg.get("run") or {}
    par, prec = cfg.get("parallel") or {}, cfg.get("precision") or {}
    layout = "" if par.get("strategy", "none") == "none" else f" {par.get('strategy')}{par.get('degree')}"
    return (
        f"{model.get('name', '?')} L{model.get('n_layers')} H{model.get('hidden_size')} "
        f"{prec.get('name', '?')} b{run.get('batch_size')}{layout}"
    )


def points_from_runs(runs: Iterable[Mapping[str, Any]]) -> tuple[list[RunPoint], list[LeftOut]]:
    """(points, left out with reasons) of ``runs`` (see the module docstring). Predicted runs,
    parent runs and runs that are no dabench run at all are dropped silently (never points);
    measured runs that cannot be points are left out with the reason."""
    points, left = [], []
    for run in runs:
        rid, tags = run["run_id"], run.get("tags") or {}
        params, metrics = run.get("params") or {}, run.get("metrics") or {}
        mode = tags.get("dabench.mode")
        if mode != "measure" or tags.get("dabench.parent") == "true":
            continue  # predicted, a sweep's parent, a refused config (mode none), a fit's own run
        status = tags.get("dabench.status", "ok")
        if status != "ok":
            why = "the result check failed" if status in ("invalid_result", "diverged") else f"status {status}"
            left.append(LeftOut(rid, f"{why}: {tags.get('dabench.reason', '')[:200]}".rstrip(": ")))
            continue
        fmt = params.get("import.format")
        arch = tags.get("dabench.arch") or INGEST_ARCH.get(str(fmt), "")
        if not arch or arch == "None":
            left.append(LeftOut(rid, "no platform recorded (tag dabench.arch)"))
            continue
        host = tags.get("dabench.host_key") or (f"{arch}:{fmt}" if fmt else f"host:{tags.get('dabench.host', '?')}")
        samples, tokens, step = (
            _num(metrics, "throughput.samples_per_s"),
            _num(metrics, "throughput.tokens_per_s"),
            _num(metrics, "step_time.median_s"),
        )
        if not (samples > 0):
            left.append(LeftOut(rid, "no measured throughput (metric throughput.samples_per_s)"))
            continue
        cfg = unflatten({k: v for k, v in params.items() if not str(k).startswith("import.")}) or None
        if cfg is not None and not all(isinstance(cfg.get(g), dict) for g in ("model", "hardware", "precision")):
            cfg = None
        classes = {
            k.split(".", 2)[2]: v
            for k, v in metrics.items()
            if k.startswith("class_time.") and isinstance(v, (int, float))
        }
        peak = _num(metrics, "perf.peak_tflops") * 1e12
        ridge = _num(metrics, "roofline.ridge_intensity")
        level = next((k.rsplit(".", 1)[1] for k in metrics if k.startswith("tier1.bandwidth_efficiency.")), "dram")
        ceilings = (peak, peak / ridge, level) if peak > 0 and ridge > 0 else None
        native = (
            str(tags.get("dabench.core.profile.precision_native", tags.get("dabench.profile.precision_native", "true")))
            != "false"
        )
        precision = str(((cfg or {}).get("precision") or {}).get("name", ""))
        points.append(
            RunPoint(
                rid,
                arch,
                host,
                str(((cfg or {}).get("hardware") or {}).get("name", arch)),
                f"ingest:{fmt}" if fmt else "dabench",
                samples,
                tokens,
                step,
                _num(metrics, "step_time.p10_s"),
                _num(metrics, "step_time.p90_s"),
                classes,
                cfg,
                config_key(params, arch, host),
                precision,
                native,
                ceilings,
                _describe(cfg, arch),
            )
        )
    return points, left


def prepare(points: list[RunPoint]) -> list[LeftOut]:
    """Build each point's RunConfig, op graph and ceilings (what a prediction needs); the points
    that cannot be predicted are returned with the reason (they stay points, but no fit sees them)."""
    from dabench.config.build import build_run_config
    from dabench.core.ceilings import Ceilings
    from dabench.workload.opgraph import build_opgraph

    unusable = []
    for p in points:
        if p.config is None:
            unusable.append(
                LeftOut(
                    p.run_id,
                    "no run config recorded (an ingested artifact without model and "
                    "deployment params): nothing to predict it from",
                )
            )
            continue
        try:
            cfg = dict(p.config)
            cfg["tracking"] = {"enabled": False}
            from dabench.perfmodel.fit.sources import hardware_yaml

            hw = cfg["hardware"]
            shipped = hardware_yaml(p.arch).get("options") or {} if (hw.get("arch") or p.arch) == p.arch else {}
            # knobs added since the run was recorded take the shipped value (they do not change what it measured)
            cfg["hardware"] = {
                **hw,
                "mode": "predict",
                "constants": "published",
                "options": {**shipped, **(hw.get("options") or {})},
            }
            rc = build_run_config(cfg)
            graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
            if p.ceilings is not None:
                roof = Ceilings(p.ceilings[0], p.ceilings[1], p.ceilings[2], "recorded on the measured run")
            elif rc.hardware.arch == "cpu":
                unusable.append(
                    LeftOut(
                        p.run_id,
                        "no ceilings recorded (the CPU calibration was refused when it "
                        "ran): a CPU prediction needs them",
                    )
                )
                continue
            else:
                from dabench.host.ceilings import resolve_ceilings

                roof = resolve_ceilings(rc.hardware, rc.precision)
        except Exception as error:  # a config this version cannot rebuild: said, not fatal
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            unusable.append(LeftOut(p.run_id, f"its recorded config does not build here: {first[:200]}"))
            continue
        p.rc, p.graph, p.roof = rc, graph, roof
    return unusable


def predict(p: RunPoint, options: Mapping[str, Any]) -> float:
    """Predicted samples/s of point ``p`` with ``options`` over its config's (NaN when refused)."""
    from dabench.core.status import DabenchError
    from dabench.perfmodel import get_predictor

    hw = replace(p.rc.hardware, options={**p.rc.hardware.options, **options})
    try:
        return float(get_predictor(hw.arch)(replace(p.rc, hardware=hw), p.graph, p.roof).samples_per_s)
    except DabenchError:
        return math.nan


def base_options(arch: str, base: str = "published") -> dict[str, Any]:
    """The knob values a fit starts from: conf/hardware/<arch>.yaml's options, with the set
    ``base``'s fitted ones over them."""
    from dabench.perfmodel.fit.constant_set import fitted_options
    from dabench.perfmodel.fit.sources import hardware_yaml

    return {**(hardware_yaml(arch).get("options") or {}), **fitted_options(base, arch)}


def fittable(arch: str, points: list[RunPoint]) -> dict[str, tuple[float, float]]:
    """knob -> bounds the fit moves for ``arch`` given ``points`` (fewer knobs than distinct configs)."""
    from dabench.perfmodel.fit.sources import fitted

    if arch in FIT_BOUNDS:
        bounds = dict(FIT_BOUNDS[arch])
        if arch == "cpu" and all(p.native for p in points):
            bounds = {k: v for k, v in bounds.items() if k not in EMULATED}  # nothing pins them
    else:
        bounds = {
            path.split(".", 1)[1]: tuple(e.bounds)
            for path, e in fitted(arch).items()
            if path.startswith("options.") and e.bounds
        }
    configs = len({p.key for p in points})
    return dict(list(bounds.items())[: max(0, configs - 1)])


def _residuals(points: list[RunPoint], options: Mapping[str, Any]) -> list[float]:
    out = []
    for p in points:
        value = predict(p, options)
        out.append(REFUSED if not (value > 0) else math.log(value / p.samples_per_s))
    return out


def refit(
    points: list[RunPoint], bounds: Mapping[str, tuple[float, float]], start: Mapping[str, Any]
) -> dict[str, float]:
    """The knobs in ``bounds`` fitted to ``points`` (bounded least squares on log throughput
    ratios, from ``start`` clipped into the bounds); {} when there is nothing to fit."""
    from scipy.optimize import least_squares

    names = list(bounds)
    if not names or not points:
        return {}
    lows, highs = [bounds[n][0] for n in names], [bounds[n][1] for n in names]

    def values(x) -> dict[str, float]:
        return {n: lo + float(v) * (hi - lo) for n, v, lo, hi in zip(names, x, lows, highs, strict=True)}

    x0 = [min(1.0, max(0.0, (float(start[n]) - lo) / (hi - lo))) for n, lo, hi in zip(names, lows, highs, strict=True)]
    fit = least_squares(
        lambda x: _residuals(points, {**start, **values(x)}),
        x0,
        bounds=(0.0, 1.0),
        method="trf",
        diff_step=1e-3,
        xtol=1e-5,
        ftol=1e-6,
        max_nfev=60,
    )
    return {n: float(f"{v:.4g}") for n, v in values(fit.x).items()}


def folds(points: list[RunPoint]) -> list[set[str]]:
    """Config keys left out together: one config each (leave one config out), or 10 folds."""
    keys = sorted({p.key for p in points})
    if len(keys) <= LOO_MAX:
        return [{k} for k in keys]
    return [set(keys[i::K_FOLD]) for i in range(K_FOLD)]


def noise_floor(points: list[RunPoint]) -> tuple[float, str]:
    """(floor, how): the median, over every measurement of a config measured more than once, of
    ``|x / median(its config) - 1|`` (what a model predicting each config's median would still
    miss); without repeats, the median of ``(p90 - p10) / (2 median)`` of the runs' step times."""
    groups: dict[str, list[float]] = {}
    for p in points:
        groups.setdefault(p.key, []).append(p.samples_per_s)
    spreads = [abs(x / statistics.median(v) - 1) for v in groups.values() if len(v) > 1 for x in v]
    if spreads:
        repeated = sum(1 for v in groups.values() if len(v) > 1)
        return statistics.median(spreads), f"repeats: {repeated} configs measured more than once, {len(spreads)} runs"
    within = [
        (p.step_p90 - p.step_p10) / (2 * p.step_s)
        for p in points
        if p.step_s > 0 and math.isfinite(p.step_p90) and math.isfinite(p.step_p10)
    ]
    if within:
        return statistics.median(within), f"no repeated configs: spread of the timed steps within {len(within)} runs"
    return math.nan, "no repeats and no step spread recorded"


@dataclass
class GroupFit:
    """The fit of one platform on one machine."""

    arch: str
    host_key: str
    points: list[RunPoint]  #: predictable points (the fit's)
    unusable: list[LeftOut]
    bounds: dict[str, tuple[float, float]]
    base: dict[str, Any]  #: the base set's knob values (start, and the 'before' column)
    fitted: dict[str, float]  #: knob -> fitted value on every point
    base_pred: dict[str, float]  #: run id -> predicted with the base constants
    in_sample: dict[str, float]  #: run id -> predicted with the fitted constants
    out_of_sample: dict[str, float]  #: run id -> predicted by a fit that did not see its config
    noise: float
    noise_how: str
    base_name: str = "published"

    def _errors(self, predictions: Mapping[str, float]) -> list[float]:
        out = []
        for p in self.points:
            v = predictions.get(p.run_id, math.nan)
            out.append(abs(v / p.samples_per_s - 1) if v > 0 else math.inf)
        return out

    def scores(self, predictions: Mapping[str, float] | None = None) -> list[float]:
        predictions = self.out_of_sample if predictions is None else predictions
        return [score(predictions.get(p.run_id, math.nan), p.samples_per_s) for p in self.points]

    @property
    def published_error(self) -> float:
        return summary(self._errors(self.base_pred))[0]

    @property
    def fitted_error(self) -> float:
        return summary(self._errors(self.out_of_sample))[0]

    @property
    def in_sample_error(self) -> float:
        return summary(self._errors(self.in_sample))[0]

    @property
    def improved(self) -> bool:
        return bool(self.fitted) and self.fitted_error < self.published_error

    @property
    def recommendation(self) -> str:
        return "fitted" if self.improved else self.base_name

    def domain(self) -> dict[str, Any]:
        """The configs the set saw: ranges of the model's shape and run, precisions, layouts."""

        def span(get):
            values = [get(p) for p in self.points]
            values = [v for v in values if isinstance(v, (int, float))]
            return [min(values), max(values)] if values else None

        return {
            "n_layers": span(lambda p: p.rc.model.n_layers),
            "hidden_size": span(lambda p: p.rc.model.hidden_size),
            "seq_len": span(lambda p: p.rc.model.seq_len),
            "batch_size": span(lambda p: p.rc.run.batch_size),
            "params": span(lambda p: p.graph.params),
            "precisions": sorted({p.rc.precision.name for p in self.points}),
            "hardware": sorted({p.rc.hardware.name for p in self.points}),
            "strategies": sorted({p.rc.parallel.strategy for p in self.points}),
        }


def fit_group(
    arch: str, host: str, points: list[RunPoint], base: str = "published", log: Callable[[str], None] | None = None
) -> GroupFit:
    """Fit ``arch``'s knobs to the points of one machine, with the out-of-sample predictions of
    both the base set and the fitted one (the module docstring)."""
    with _quiet_model():
        return _fit_group(arch, host, points, base, log)


@contextmanager
def _quiet_model():
    """The device model's emulated-precision warning (once per prediction) off while refitting."""
    import logging

    quiet = logging.getLogger("dabench.perfmodel.device")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        yield
    finally:
        quiet.setLevel(level)


def _fit_group(arch: str, host: str, points: list[RunPoint], base: str, log: Callable[[str], None] | None) -> GroupFit:
    unusable = prepare(points)
    bad = {u.run_id for u in unusable}
    usable = [p for p in points if p.run_id not in bad]
    start = base_options(arch, base)
    bounds = fittable(arch, usable)
    fitted = refit(usable, bounds, start)
    base_pred = {p.run_id: predict(p, start) for p in usable}
    in_sample = {p.run_id: predict(p, {**start, **fitted}) for p in usable}
    out: dict[str, float] = {}
    if fitted:
        chunks = folds(usable)
        for i, keys in enumerate(chunks, 1):
            train = [p for p in usable if p.key not in keys]
            if log:
                log(f"  {arch} [{host}]: out-of-sample fit {i}/{len(chunks)} without {len(usable) - len(train)} run(s)")
            trained = refit(train, fittable(arch, train) if len({p.key for p in train}) > 1 else {}, start)
            for p in usable:
                if p.key in keys:
                    out[p.run_id] = predict(p, {**start, **trained})
    else:
        out = dict(base_pred)  # nothing fitted: the base constants, which saw none of these points
    floor, how = noise_floor(usable or points)
    return GroupFit(
        arch,
        host,
        usable,
        unusable,
        bounds,
        {k: start.get(k) for k in bounds},
        fitted,
        base_pred,
        in_sample,
        out,
        floor,
        how,
        base,
    )


def group_points(
    points: list[RunPoint], arch: str | None = None, host: str | None = None
) -> dict[tuple[str, str], list[RunPoint]]:
    """(platform, host key) -> its points: machines of one platform are fitted apart."""
    out: dict[tuple[str, str], list[RunPoint]] = {}
    for p in points:
        if (arch and p.arch != arch) or (host and p.host_key != host):
            continue
        out.setdefault((p.arch, p.host_key), []).append(p)
    return out


def _n(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 6)


def platform_entry(g: GroupFit, nominal: float = NOMINAL) -> dict[str, Any]:
    """One platform's entry of a constant set (the constant-set format plus this fit's keys)."""
    from dabench.perfmodel.fit import model_version
    from dabench.perfmodel.fit.constant_set import _band_record
    from dabench.perfmodel.fit.sources import constant_paths, hardware_yaml, load_sources

    sources = load_sources(g.arch)
    constants = {}
    for path, value in constant_paths(hardware_yaml(g.arch)):
        entry = sources.get(path)
        record: dict[str, Any] = {"value": value, "kind": entry.kind if entry else "setting"}
        if entry is not None and entry.kind == "fitted":
            record.update(bounds=list(entry.bounds) if entry.bounds else None, points=list(entry.points))
        elif entry is not None:
            record.update({k: getattr(entry, k) for k in ("document", "locator", "reason") if getattr(entry, k)})
        constants[path] = record
    for name, value in g.fitted.items():
        constants[f"options.{name}"] = {
            "value": value,
            "kind": "fitted",
            "bounds": list(g.bounds[name]),
            "points": [p.run_id for p in g.points],
            "before": g.base.get(name),
        }
    scores = g.scores()
    kind, q = band_q(scores, [], nominal)
    band = _band_record(kind, q, len(scores), conformal_rank(len(scores), nominal), nominal, len(scores))
    if kind == "wide":
        band["note"] = band["note"].replace("of every platform", "of this fit")
    residuals = []
    covered = 0
    for p, s in zip(g.points, scores, strict=True):
        others = [t for t, r in zip(scores, g.points, strict=True) if r.run_id != p.run_id]
        _, q_other = band_q(others, [], nominal)
        hit = q_other is not None and s <= q_other
        covered += hit
        residuals.append(
            {
                "point": p.run_id,
                "metric": "samples_per_s",
                "use": "fit",
                "published": _n(p.samples_per_s),
                "measured": _n(p.samples_per_s),
                "config": p.describe,
                "base": _n(g.base_pred.get(p.run_id, math.nan)),
                "in_sample": _n(g.in_sample.get(p.run_id, math.nan)),
                "out_of_sample": _n(g.out_of_sample.get(p.run_id, math.nan)),
                "left_out": bool(g.fitted),
                "covered": hit,
                "class_times": p.class_times or None,
            }
        )
    med_in, max_in = summary(g._errors(g.in_sample))
    med_out, max_out = summary(g._errors(g.out_of_sample))
    med_pub, max_pub = summary(g._errors(g.base_pred))
    return {
        "model_hash": model_version(g.arch),
        "host_key": g.host_key,
        "calibration_points": len(g.points),
        "throughput_points": len(g.points),
        "fitted_constants": len(g.fitted),
        "constants": constants,
        "residuals": residuals,
        "summary": {
            "in_sample_median_abs_error": _n(med_in),
            "in_sample_max_abs_error": _n(max_in),
            "out_of_sample_median_abs_error": _n(med_out),
            "out_of_sample_max_abs_error": _n(max_out),
        },
        "band": band,
        "comparison": {
            "base": g.base_name,
            "base_median_abs_error": _n(med_pub),
            "base_max_abs_error": _n(max_pub),
            "fitted_out_of_sample_median_abs_error": _n(med_out),
            "noise_floor": _n(g.noise),
            "noise_floor_method": g.noise_how,
            "out_of_sample_method": "leave one config out"
            if len(folds(g.points)) == len({p.key for p in g.points})
            else f"{K_FOLD}-fold by config",
            "improved": g.improved,
            "covered": covered,
        },
        "recommendation": g.recommendation,
        "domain": g.domain(),
        "left_out": [{"run_id": u.run_id, "reason": u.reason} for u in g.unusable],
    }


def build_set(name: str, fits: list[GroupFit], source: Mapping[str, Any], nominal: float = NOMINAL) -> dict[str, Any]:
    """A constant set (the format of :mod:`.constant_set`) from fits of one machine per platform."""
    from dabench.perfmodel.fit import constant_set

    platforms = {g.arch: platform_entry(g, nominal) for g in fits}
    rows = [r for e in platforms.values() for r in e["residuals"]]
    covered = sum(bool(r["covered"]) for r in rows)
    errors = [abs(r["out_of_sample"] / r["measured"] - 1) if r["out_of_sample"] else math.inf for r in rows]
    med, worst = summary(errors)
    lo, hi = clopper_pearson(covered, len(rows)) if rows else (math.nan, math.nan)
    return {
        **constant_set.header(name, nominal, BAND_METHOD),
        "source": dict(source),
        "platforms": platforms,
        "cv": {
            "points": len(rows),
            "covered": covered,
            "coverage": _n(covered / len(rows)) if rows else None,
            "binomial_95": [_n(lo), _n(hi)],
            "out_of_sample_median_abs_error": _n(med),
            "out_of_sample_max_abs_error": _n(worst),
        },
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _pct(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def report(g: GroupFit) -> str:
    """The per-platform text of ``fit --from-mlflow``: points, constants changed (old -> new,
    bounds), base vs fitted out-of-sample error beside the noise floor, the recommendation."""
    lines = [
        f"== {g.arch} [{g.host_key}]: {len(g.points)} points used ({len({p.key for p in g.points})} configs)"
        + (f", {len(g.unusable)} not predictable" if g.unusable else "")
    ]
    for u in g.unusable:
        lines.append(f"  not used: {u.run_id}: {u.reason}")
    if not g.fitted:
        lines.append("  constants changed: none (too few configs, or no fittable knob for this platform)")
    else:
        lines.append("  constants changed (old -> new, bounds):")
        for name, value in g.fitted.items():
            lo, hi = g.bounds[name]
            edge = (
                " (at a bound)"
                if math.isclose(value, lo, rel_tol=1e-3, abs_tol=1e-12) or math.isclose(value, hi, rel_tol=1e-3)
                else ""
            )
            lines.append(f"    {name}: {_fmt(g.base.get(name))} -> {_fmt(value)}  [{lo:g}, {hi:g}]{edge}")
    method = "leave one config out" if len(folds(g.points)) == len({p.key for p in g.points}) else f"{K_FOLD}-fold"
    lines.append(
        f"  median |error| on these points, out of sample ({method}): {g.base_name} {_pct(g.published_error)}, "
        f"fitted {_pct(g.fitted_error)} (in sample {_pct(g.in_sample_error)}); noise floor "
        f"{_pct(g.noise)} ({g.noise_how})"
    )
    if g.improved:
        lines.append(
            f"  recommendation: the fitted set (out-of-sample error {_pct(g.published_error)} -> "
            f"{_pct(g.fitted_error)})"
        )
    else:
        lines.append(
            f"  the fit does NOT lower the out-of-sample error: recommendation: keep the {g.base_name} constants"
        )
    return "\n".join(lines)


def last_line(fits: list[GroupFit]) -> str:
    pts = [p for g in fits for p in g.points]
    pub = [e for g in fits for e in g._errors(g.base_pred)]
    fit = [e for g in fits for e in g._errors(g.out_of_sample)]
    floors = [g.noise for g in fits if math.isfinite(g.noise)]
    return (
        f"published_median_abs_error={summary(pub)[0]:.4f} fitted_median_abs_error={summary(fit)[0]:.4f} "
        f"noise_floor={(statistics.median(floors) if floors else math.nan):.4f} points={len(pts)}"
    )


# ----------------------------------------------------------------------------- drift


@dataclass
class Drift:
    name: str
    arch: str
    n: int
    outside: int
    nominal: float
    p_value: float

    @property
    def drifted(self) -> bool:
        return self.n > 0 and self.p_value < 0.05 and self.outside / self.n > 1 - self.nominal


def drift(name: str, constant_set: Mapping[str, Any], points: list[RunPoint]) -> list[Drift]:
    """Per platform of ``constant_set`` with a band: how many of ``points`` (recent measured runs
    of that platform and, where the set names one, machine) fall outside the band around the
    set's prediction, and the binomial tail probability of that many misses at the band's
    nominal rate (a set drifted when it misses more often than 1 - nominal, p < 0.05)."""
    from scipy.stats import binom

    from dabench.perfmodel.fit.constant_set import band as band_of

    out = []
    for arch, entry in (constant_set.get("platforms") or {}).items():
        factor = (entry.get("band") or {}).get("factor")
        if not factor:
            continue
        mine = [p for p in points if p.arch == arch and (not entry.get("host_key") or p.host_key == entry["host_key"])]
        bad = {u.run_id for u in prepare(mine)}
        mine = [p for p in mine if p.run_id not in bad]
        options = base_options(arch)
        if name != "published":  # the set's own fitted knobs (it may be a FILE not on the search path)
            options.update(
                {
                    k.split(".", 1)[1]: c["value"]
                    for k, c in (entry.get("constants") or {}).items()
                    if k.startswith("options.") and c.get("kind") == "fitted"
                }
            )
        outside = 0
        for p in mine:
            with _quiet_model():
                value = predict(p, options)
            interval = band_of(arch, value, constant_set) if value > 0 else None
            if interval is None or not (interval[0] <= p.samples_per_s <= interval[1]):
                outside += 1
        nominal = float(constant_set.get("nominal_coverage") or NOMINAL)
        p_value = float(binom.sf(outside - 1, len(mine), 1 - nominal)) if mine else 1.0
        out.append(Drift(name, arch, len(mine), outside, nominal, p_value))
    return out
