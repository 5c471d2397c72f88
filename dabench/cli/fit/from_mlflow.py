"""``dabench fit --from-mlflow [SELECTION]``: measured runs of a store -> points -> a named constant
set (never ``published``), written to the user folder and logged on an MLflow run of its own.
:func:`run_from_mlflow` returns the exit status (0 a set written; 1 nothing to fit or predict; 2 a
bad --name or selection). Method: docs/fitting.md.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from dabench.core.numbers import bad_metrics
from dabench.core.status import ConfigError
from dabench.fit import constant_set
from dabench.fit.cv import summary
from dabench.fit.machine import K_FOLD, GroupFit, fit_group, folds
from dabench.fit.refit import measured_classes
from dabench.fit.runs import DAMAGED, group_points, points_from_runs
from dabench.perfmodel import constants
from dabench.tracking.lifecycle import recorded_run
from dabench.tracking.redact import redact_uri
from dabench.tracking.store import tracking_uri


def run_dicts(frame) -> list[dict]:
    """The rows of a report frame (dabench/report/frame.py) as ``{run_id, tags, params, metrics}``."""
    return [
        {"run_id": row["run_id"], **{key: _part(row, key + ".") for key in ("tags", "params", "metrics")}}
        for row in frame.to_dict("records")
    ]


def _part(row: dict, prefix: str) -> dict:
    return {
        k[len(prefix) :]: v
        for k, v in row.items()
        if k.startswith(prefix) and v is not None and not (isinstance(v, float) and math.isnan(v))
    }


def run_from_mlflow(args) -> int:
    """``--from-mlflow [SELECTION]``: measured runs -> points -> a named constant set (docs/fitting.md)."""
    from dabench.report.frame import load_frame

    name = args.name
    if name == constants.PUBLISHED or constants.is_file_ref(name) or not re.fullmatch(r"[\w.-]+", name):
        raise ConfigError(
            "",
            None,
            f"--name {name!r}: give a plain NAME other than published (the shipped set is never "
            f"written from runs; sets go to {constants.user_dir()})",
        )
    uri = tracking_uri(args.tracking_uri)
    frame, selection = load_frame(uri, args.from_mlflow or None)  # SelectionError: one line, exit 2
    points, left = points_from_runs(run_dicts(frame))
    arch = args.arch[0] if args.arch else None
    _check_choice(points, arch, args.host)
    _add_class_times(points, uri)
    groups = group_points(points, arch, args.host)
    print(
        f"store {redact_uri(uri)}, {selection.label}: {len(frame)} runs, {len(points)} measured ok "
        f"(points), {len(left)} left out"
    )
    damaged = [item for item in left if item.reason.startswith(DAMAGED)]
    for item in (item for item in left if item not in damaged):
        print(f"  left out: {item.run_id}: {item.reason}")
    if damaged:
        first = damaged[0]
        print(
            f"  skipped {len(damaged)} run(s) with a stored metric not finite or out of its range "
            f"(first: {first.run_id}: {first.reason[len(DAMAGED) :].strip()})"
        )
    if not groups:
        print("no measured runs with status ok in this selection: nothing to fit", file=sys.stderr)
        return 1
    fits = [
        fit_group(a, h, pts, base=args.base, log=lambda m: print(m, file=sys.stderr, flush=True))
        for (a, h), pts in groups.items()
    ]
    chosen: dict[str, GroupFit] = {}
    for g in fits:
        print(report(g))
        if g.points and (g.arch not in chosen or len(g.points) > len(chosen[g.arch].points)):
            chosen[g.arch] = g
    for g in (g for g in fits if chosen.get(g.arch) is not g):
        print(
            f"note: {g.arch} [{g.host_key}] is another machine of {g.arch}: not in set {name} "
            f"(fit it alone with --host '{g.host_key}' --name ANOTHER_NAME)"
        )
    if not chosen:
        print("no point could be predicted: no constant set written", file=sys.stderr)
        return 1
    source = {
        "kind": "mlflow",
        "store": redact_uri(uri),
        "selection": selection.label,
        "run_ids": [p.run_id for g in chosen.values() for p in g.points],
        "left_out": [{"run_id": i.run_id, "reason": i.reason} for i in left]
        + [{"run_id": u.run_id, "reason": u.reason} for g in chosen.values() for u in g.unusable],
        "base": args.base,
    }
    data = constant_set.build_set(name, list(chosen.values()), source)
    path = constant_set.write(data, name)
    print(
        f"constant set {name}: {path}; use it: hardware.constants={name}; "
        f"share it: python -m dabench fit --export {name}"
    )
    if not args.no_log:
        print(f"logged on MLflow run {_log_set(data, path, uri, args.experiment)} (experiment {args.experiment})")
    print(last_line(list(chosen.values())))
    return 0


def _check_choice(points: list, arch: str | None, host: str | None) -> None:
    """ConfigError when ``--arch``/``--host`` select nothing among the measured points."""
    for flag, wanted, known in (
        ("--arch", arch, {p.platform for p in points}),
        ("--host", host, {p.host_key for p in points if not arch or p.platform == arch}),
    ):
        if wanted and wanted not in known:
            listed = ", ".join(repr(k) for k in sorted(known)) or "(none)"
            raise ConfigError(
                "", None, f"{flag} {wanted!r}: no measured run of it in this selection (measured here: {listed})"
            )


def _add_class_times(points: list, uri: str) -> None:
    """Each point's per-class times where its run profiled them (result.json's
    ``profile.class_times_s``; a run without the artifact, or with a bad time in it, keeps none)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    for point in (p for p in points if not p.class_times and p.source == "dabench"):
        try:
            with tempfile.TemporaryDirectory() as tmp:
                local = client.download_artifacts(point.run_id, "result.json", tmp)
                profile = json.loads(Path(local).read_text()).get("profile") or {}
            times = dict(profile.get("class_times_s") or {})
            if not bad_metrics({f"class_time.{k}": v for k, v in times.items()}):
                point.class_times = {k: float(v) for k, v in times.items()}
        except Exception:  # no artifact (an ingested or synthetic run), or a store without artifacts
            continue


def _log_set(data: dict, path: Path, uri: str, experiment: str) -> str:
    """The constant set on an MLflow run of its own (never a point: no dabench.mode tag)."""
    tags = {
        "dabench.kind": "constant_set",
        "dabench.constants": data["name"],
        "dabench.constants.recommendation": ",".join(
            f"{a}:{e['recommendation']}" for a, e in data["platforms"].items()
        ),
    }
    metrics = {
        f"{arch}.{key}": float(value)
        for arch, entry in data["platforms"].items()
        for key, value in entry["comparison"].items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    with (
        recorded_run(experiment=experiment, uri=uri, run_name=f"constant set {data['name']}", tags=tags) as run,
        tempfile.TemporaryDirectory() as tmp,
    ):
        (Path(tmp) / path.name).write_text(path.read_text())
        run.log(
            params={
                "constants.name": data["name"],
                "constants.selection": data["source"]["selection"][:500],
                "constants.points": len(data["source"]["run_ids"]),
            },
            metrics=metrics,
        )
        run.log_artifacts(Path(tmp), "constant_set")
    return run.run_id


def _fmt(value: Any) -> str:
    return "-" if value is None else (f"{value:.4g}" if isinstance(value, float) else str(value))


def _pct(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def report(g: GroupFit) -> str:
    """The per-platform text of ``fit --from-mlflow``: points, constants changed (old -> new,
    bounds), base vs fitted out-of-sample error beside the noise floor, the recommendation."""
    lines = [
        f"== {g.arch} [{g.host_key}]: {len(g.points)} points used ({len({p.key for p in g.points})} configs)"
        + (f", {len(g.unusable)} not predictable" if g.unusable else ""),
        *(f"  not used: {u.run_id}: {u.reason}" for u in g.unusable),
    ]
    profiled = [len(measured_classes(p)) for p in g.points if measured_classes(p)]
    if profiled:
        lines.append(
            f"  per-class times: {len(profiled)} of {len(g.points)} points profiled their op classes "
            f"({sum(profiled)} class residuals beside {len(g.points)} throughput residuals)"
        )
    if not g.fitted:
        lines.append("  constants changed: none (too few configs, or no fittable knob for this platform)")
    else:
        lines.append("  constants changed (old -> new, bounds):")
        for name, value in g.fitted.items():
            lo, hi = g.bounds[name]
            edge = math.isclose(value, lo, rel_tol=1e-3, abs_tol=1e-12) or math.isclose(value, hi, rel_tol=1e-3)
            bounds = f"[{lo:g}, {hi:g}]" + (" (at a bound)" if edge else "")
            lines.append(f"    {name}: {_fmt(g.base.get(name))} -> {_fmt(value)}  {bounds}")
    method = "leave one config out" if len(folds(g.points)) == len({p.key for p in g.points}) else f"{K_FOLD}-fold"
    lines += [
        f"  median |error| on these points, out of sample ({method}): {g.base_name} {_pct(g.published_error)}, "
        f"fitted {_pct(g.fitted_error)} (in sample {_pct(summary(g._errors(g.in_sample))[0])}); noise floor "
        f"{_pct(g.noise)} ({g.noise_how})",
        f"  recommendation: the fitted set (out-of-sample error {_pct(g.published_error)} -> {_pct(g.fitted_error)})"
        if g.improved
        else f"  the fit does NOT lower the out-of-sample error: recommendation: keep the {g.base_name} constants",
    ]
    return "\n".join(lines)


def last_line(fits: list[GroupFit]) -> str:
    pub = [e for g in fits for e in g._errors(g.base_pred)]
    fit = [e for g in fits for e in g._errors(g.out_of_sample)]
    floors = [g.noise for g in fits if math.isfinite(g.noise)]
    return (
        f"published_median_abs_error={summary(pub)[0]:.4f} fitted_median_abs_error={summary(fit)[0]:.4f} "
        f"noise_floor={(statistics.median(floors) if floors else math.nan):.4f} "
        f"points={sum(len(g.points) for g in fits)}"
    )
