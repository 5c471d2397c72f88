"""The one reader of runs: MLflow -> a pandas frame, one row per run, by paginated ``search_runs``.

Columns: the run's attributes, ``metrics.*``, ``params.*``, ``tags.*`` (as stored) and the normalized
columns of :func:`normalize` (numbers the guard of :mod:`dabench.core.numbers` refuses are NaN).
Derivation: docs/report.md, "What a report holds" and "Structure".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import pandas as pd

from dabench.core.numbers import bad_number
from dabench.core.status import DabenchError, Status
from dabench.tracking.describe import NOTE_TAG
from dabench.tracking.redact import redact_uri
from dabench.tracking.store import open_client, search_all, sqlite_path, tracking_uri

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_FILTER_SIGN = re.compile(r"(=|<|>|\bLIKE\b|\bILIKE\b|\bIN\b)", re.IGNORECASE)


class SelectionError(DabenchError, ValueError, status=Status.INVALID_CONFIG):
    """A selection that names nothing in the store; the message lists what exists."""


@dataclass(frozen=True)
class Selection:
    """What a report or comparison covers: ``kind`` is all / experiment / run / study / filter."""

    kind: str
    label: str
    experiment_ids: tuple[str, ...]
    filters: tuple[str, ...] = ("",)  #: MLflow filters; the selection is the union of their runs
    parent_run_ids: tuple[str, ...] = field(default_factory=tuple)

    @property
    def sweep_parent(self) -> str | None:
        """The one parent run a report of this selection is also logged under, if any."""
        return self.parent_run_ids[0] if self.kind in ("run", "study") and len(self.parent_run_ids) == 1 else None


def client_for(uri: str | None):
    """A client on ``uri`` (default: dabench's store; read-only while the command writes no store,
    tracking/store.py); :class:`SelectionError` for a SQLite store whose file does not exist."""
    resolved = tracking_uri(uri)
    path = sqlite_path(resolved)
    if path is not None and not path.exists():
        raise SelectionError(f"no MLflow store at {path} (run dabench here first, or pass --tracking-uri URI)")
    return open_client(resolved)


def _experiments(client) -> list:
    return list(client.search_experiments(max_results=50000))


def _what_exists(client, experiment_ids: list[str]) -> str:
    """The experiments and studies (parents tag optuna.study, trials optuna_study) in the store."""
    names = [e.name for e in _experiments(client)]
    studies = {
        r.data.tags["optuna.study"]
        for r in search_all(client, experiment_ids, "tags.`optuna.study` LIKE '%'")
        if r.data.tags.get("optuna.study")
    }
    studies |= {r.data.tags["optuna_study"] for r in search_all(client, experiment_ids, "tags.optuna_study LIKE '%'")}
    return (
        f"experiments: {', '.join(names) or '(none)'}; studies: {', '.join(sorted(studies)) or '(none)'}; "
        "or a run id, or an MLflow filter such as \"params.hardware.name = 'ipu'\""
    )


def resolve_selection(client, selection: str | None, kind: str = "auto") -> Selection:
    """The :class:`Selection` ``selection`` names; ``kind`` auto tries a run id, an experiment, a
    study, then a filter. :class:`SelectionError` naming what exists when nothing matches."""
    experiment_ids = [e.experiment_id for e in _experiments(client)]
    if not selection:
        return Selection("all", "all runs", tuple(experiment_ids))
    if kind in ("auto", "run") and RUN_ID.match(selection):
        try:
            run = client.get_run(selection)
        except Exception:
            run = None
        if run is not None:
            where, children = (run.info.experiment_id,), f"tags.mlflow.parentRunId = '{selection}'"
            if search_all(client, where, children, limit=1):
                return Selection("run", f"sweep {selection}", where, (children,), (selection,))
            return Selection("run", f"run {selection}", where, (f"attributes.run_id = '{selection}'",))
    if kind in ("auto", "experiment"):
        found = client.get_experiment_by_name(selection)
        if found is not None:
            return Selection("experiment", f"experiment {selection}", (found.experiment_id,))
    if kind == "study" or (kind == "auto" and "'" not in selection):  # trials: optuna_study; parents: optuna.study
        parents = search_all(client, experiment_ids, f"tags.`optuna.study` = '{selection}'")
        trials = search_all(client, experiment_ids, f"tags.optuna_study = '{selection}'", limit=1)
        if parents or trials:
            ids = tuple(r.info.run_id for r in parents)
            filters = (
                (f"tags.optuna_study = '{selection}'",)
                if trials
                else tuple(f"tags.mlflow.parentRunId = '{i}'" for i in ids)
            )
            return Selection("study", f"study {selection}", tuple(experiment_ids), filters, ids)
    if kind == "filter" or (kind == "auto" and _FILTER_SIGN.search(selection)):
        try:
            search_all(client, experiment_ids, selection, limit=1)
        except Exception as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise SelectionError(f"invalid MLflow filter {selection!r}: {first}") from None
        return Selection("filter", f"filter {selection}", tuple(experiment_ids), (selection,))
    missing = {"experiment": f"no experiment {selection!r}", "study": f"no study {selection!r}"}  # by kind
    if RUN_ID.match(selection):
        missing["run"] = f"no run {selection} in this store"
    what = missing.get(kind, f"{selection!r} is no run id, experiment, study or filter in this store")
    raise SelectionError(f"{what} ({_what_exists(client, experiment_ids)})")


def _number(column: str, value: Any) -> float:
    """``value`` of ``column`` (``metrics.NAME``, ``params.NAME``) as a float; NaN when absent or
    when the number guard refuses it (:mod:`dabench.core.numbers`: not finite, out of range)."""
    return float("nan") if value is None or bad_number(column.split(".", 1)[-1], value) else float(value)


_STATE_STATUS = {
    "FINISHED": "ok",
    "FAILED": "failed",
    "KILLED": "killed",
    "RUNNING": "running",
    "SCHEDULED": "scheduled",
}


#: normalized text column -> (default, then the columns it is read from, first found wins)
_TEXT_COLUMNS = {
    "platform": ("unknown", "tags.dabench.hardware", "params.hardware.name"),
    "mode": ("unknown", "tags.dabench.mode"),
    "status": ("unknown", "tags.dabench.status"),  # unknown: from the MLflow state
    "reason": ("", "tags.dabench.reason"),
    "diagnosis": ("", "tags.dabench.diagnosis"),
    "diagnosis_reason": ("", "tags.dabench.diagnosis_reason"),
    "precision": ("unknown", "params.precision.name", "params.precision.compute_dtype"),
    "strategy": ("none", "params.parallel.strategy"),
    "model": ("unknown", "tags.dabench.model", "params.model.name"),
}
#: normalized number column -> the columns it is read from (NaN when none holds a number)
_NUMBER_COLUMNS = {
    "layers": ("params.model.n_layers",),
    "hidden": ("params.model.hidden_size",),
    "batch": ("params.run.batch_size",),
    "chips": ("metrics.chips", "params.parallel.degree"),
    "throughput": ("metrics.throughput.samples_per_s",),
    "li": ("metrics.tier1.load_imbalance",),
    "allocation": ("metrics.tier1.allocation_ratio",),
    "compute_efficiency": ("metrics.tier1.compute_efficiency",),
    "comm_share": ("metrics.tier2.comm_fraction",),
    "scaling_efficiency": ("metrics.tier2.scaling_efficiency",),
    "intensity": ("metrics.roofline.step.intensity",),
}


def runs_to_frame(runs: Iterable, experiment_names: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per MLflow run (see the module docstring). Pure: no store access."""
    names = experiment_names or {}
    rows = [
        {
            "run_id": run.info.run_id,
            "experiment": names.get(run.info.experiment_id, run.info.experiment_id),
            "run_name": run.data.tags.get("mlflow.runName", run.info.run_name or ""),
            "mlflow_status": run.info.status,
            "start": pd.to_datetime(run.info.start_time, unit="ms", utc=True) if run.info.start_time else pd.NaT,
            "end": pd.to_datetime(run.info.end_time, unit="ms", utc=True) if run.info.end_time else pd.NaT,
            "parent_run_id": run.data.tags.get("mlflow.parentRunId"),
            **{f"metrics.{k}": v for k, v in run.data.metrics.items()},
            **{f"params.{k}": v for k, v in run.data.params.items()},
            **{f"tags.{k}": v for k, v in run.data.tags.items() if not k.startswith("mlflow.") or k == NOTE_TAG},
        }
        for run in runs
    ]
    return normalize(pd.DataFrame(rows))


def normalize(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the normalized columns (platform, mode, status, model shape, throughput, Tier-1/2, roofline;
    docs/report.md) from tags, else params, else NaN / ``"unknown"``."""
    frame = frame.copy()
    if frame.empty:
        for column in ("run_id", "run_name", "platform", "mode", "status", "reason", "diagnosis", "is_parent"):
            frame[column] = pd.Series(dtype=object)
        return frame

    def col(name: str) -> pd.Series:
        return frame[name] if name in frame.columns else pd.Series([None] * len(frame), index=frame.index)

    def text(*names: str, default: str = "unknown") -> pd.Series:
        out = pd.Series([default] * len(frame), index=frame.index, dtype=object)
        for name in reversed(names):
            values = col(name)
            present = values.notna() & ~values.astype(str).isin(["", "None", "nan"])
            out[present] = values[present].astype(str)
        return out

    def number(*names: str) -> pd.Series:
        out = pd.Series([float("nan")] * len(frame), index=frame.index)
        for name in reversed(names):
            values = col(name).map(lambda value, column=name: _number(column, value))
            out[values.notna()] = values[values.notna()]
        return out

    frame["is_parent"] = (col("tags.dabench.parent").astype(str) == "true") | col("tags.optuna.study").notna()
    for column, (default, *names) in _TEXT_COLUMNS.items():
        frame[column] = text(*names, default=default)
    state = col("mlflow_status").map(lambda s: _STATE_STATUS.get(str(s), str(s).lower()))
    frame.loc[frame["status"] == "unknown", "status"] = state[frame["status"] == "unknown"]
    for column, names in _NUMBER_COLUMNS.items():
        frame[column] = number(*names)
    frame["achieved_flops"] = number("metrics.perf.achieved_tflops") * 1e12
    frame["peak_flops"] = number("metrics.perf.peak_tflops") * 1e12
    frame["bandwidth"] = frame["peak_flops"] / number("metrics.roofline.ridge_intensity")
    return frame


def load_frame(
    uri: str | None = None, selection: str | None = None, kind: str = "auto", include_parents: bool = False, client=None
) -> tuple[pd.DataFrame, Selection]:
    """(runs frame, selection) for ``selection`` in the store at ``uri`` (or through ``client``);
    parent runs (sweeps, studies) are left out unless ``include_parents``."""
    client = client or client_for(uri)
    chosen = resolve_selection(client, selection, kind)
    names = {e.experiment_id: e.name for e in _experiments(client)}
    frame = runs_to_frame([run for f in chosen.filters for run in search_all(client, chosen.experiment_ids, f)], names)
    if not include_parents and not frame.empty:
        frame = frame[~frame["is_parent"]].reset_index(drop=True)
    return frame, chosen


def load_runs(uri: str | None, run_ids: list[str]) -> pd.DataFrame:
    """The frame of exactly ``run_ids`` (in that order), from one search over every experiment.
    Raises :class:`SelectionError` naming the ids the store does not hold."""
    client = client_for(uri)
    names = {e.experiment_id: e.name for e in _experiments(client)}
    wanted = list(dict.fromkeys(run_ids))
    quoted = ", ".join(f"'{i}'" for i in wanted if RUN_ID.match(i))
    found = search_all(client, list(names), f"attributes.run_id IN ({quoted})") if quoted else []
    missing = [i for i in wanted if i not in {r.info.run_id for r in found}]
    if missing:
        raise SelectionError(
            f"unknown run id(s): {', '.join(missing)} (store {redact_uri(client.tracking_uri)}, experiments: "
            f"{', '.join(names.values()) or '(none)'}; the run ids are in the runs.csv of "
            "python -m dabench report --out DIR)"
        )
    return runs_to_frame(found, names).set_index("run_id").loc[wanted].reset_index()
