"""``dabench fit --from-mlflow [SELECTION]``: measured runs of a store -> points -> a named constant
set, written to the user folder and logged on an MLflow run of its own.

Contract: :func:`run_from_mlflow` returns the exit status (0 a set written; 1 nothing to fit or
predict; 2 a bad --name or selection) and prints the runs left out, each platform's before/after
report and, last, the summary line. The shipped set ``published`` is never written here.
The fit itself: dabench/fit/from_runs/ (docs/fitting.md).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from dabench.fit import constant_set, from_runs
from dabench.perfmodel import constants
from dabench.tracking.lifecycle import recorded_run
from dabench.tracking.redact import redact_uri
from dabench.tracking.store import tracking_uri


def run_dicts(frame) -> list[dict]:
    """The rows of a report frame (dabench/report/frame.py) as ``{run_id, tags, params, metrics}``."""
    import pandas as pd

    runs = []
    for row in frame.to_dict("records"):

        def part(prefix: str, row: dict = row) -> dict:
            return {
                k[len(prefix) :]: v
                for k, v in row.items()
                if k.startswith(prefix) and v is not None and not (isinstance(v, float) and pd.isna(v))
            }

        runs.append(
            {"run_id": row["run_id"], "tags": part("tags."), "params": part("params."), "metrics": part("metrics.")}
        )
    return runs


def run_from_mlflow(args) -> int:
    """``--from-mlflow [SELECTION]``: measured runs -> points -> a named constant set (docs/fitting.md)."""
    from dabench.report.frame import SelectionError, load_frame

    name = args.name
    if name == constants.PUBLISHED or constants.is_file_ref(name) or not re.fullmatch(r"[\w.-]+", name):
        print(
            f"dabench fit: --name {name!r}: give a plain NAME other than published (the shipped set is never "
            f"written from runs; sets go to {constants.user_dir()})",
            file=sys.stderr,
        )
        return 2
    uri = tracking_uri(args.tracking_uri)
    try:
        frame, selection = load_frame(uri, args.from_mlflow or None)
    except SelectionError as error:
        print(f"dabench fit: {error}", file=sys.stderr)
        return 2
    points, left = from_runs.points_from_runs(run_dicts(frame))
    _add_class_times(points, uri)
    arch = args.arch[0] if args.arch else None
    groups = from_runs.group_points(points, arch, args.host)
    print(
        f"store {redact_uri(uri)}, {selection.label}: {len(frame)} runs, {len(points)} measured ok "
        f"(points), {len(left)} left out"
    )
    for item in left:
        print(f"  left out: {item.run_id}: {item.reason}")
    if not groups:
        print("no measured runs with status ok in this selection: nothing to fit", file=sys.stderr)
        return 1
    log = lambda m: print(m, file=sys.stderr, flush=True)
    fits = [from_runs.fit_group(a, h, pts, base=args.base, log=log) for (a, h), pts in groups.items()]
    chosen: dict[str, from_runs.GroupFit] = {}
    for g in fits:
        print(from_runs.report(g))
        if g.points and (g.arch not in chosen or len(g.points) > len(chosen[g.arch].points)):
            chosen[g.arch] = g
    for g in fits:
        if chosen.get(g.arch) is not g:
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
    data = from_runs.build_set(name, list(chosen.values()), source)
    path = constant_set.write(data, name)
    print(
        f"constant set {name}: {path}; use it: hardware.constants={name}; "
        f"share it: python -m dabench fit --export {name}"
    )
    if not args.no_log:
        print(f"logged on MLflow run {_log_set(data, path, uri, args.experiment)} (experiment {args.experiment})")
    print(from_runs.last_line(list(chosen.values())))
    return 0


def _add_class_times(points: list, uri: str) -> None:
    """Each point's per-class times where its run profiled them (result.json's
    ``profile.class_times_s``; a run without the artifact keeps none)."""
    import tempfile

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    for point in points:
        if point.class_times or point.source != "dabench":
            continue
        try:
            with tempfile.TemporaryDirectory() as tmp:
                local = client.download_artifacts(point.run_id, "result.json", tmp)
                profile = json.loads(Path(local).read_text()).get("profile") or {}
            point.class_times = {k: float(v) for k, v in (profile.get("class_times_s") or {}).items()}
        except Exception:  # no artifact (an ingested or synthetic run), or a store without artifacts
            continue


def _log_set(data: dict, path: Path, uri: str, experiment: str) -> str:
    """The constant set on an MLflow run of its own (never a point: no dabench.mode tag)."""
    import tempfile

    tags = {
        "dabench.kind": "constant_set",
        "dabench.constants": data["name"],
        "dabench.constants.recommendation": ",".join(
            f"{a}:{e['recommendation']}" for a, e in data["platforms"].items()
        ),
    }
    metrics = {}
    for arch, entry in data["platforms"].items():
        for key, value in entry["comparison"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value is not None:
                metrics[f"{arch}.{key}"] = float(value)
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
