"""Study plots (matplotlib PNGs, drawn on a bare Figure: no pyplot state): optimization history and
parameter importance."""

from __future__ import annotations

import io
import itertools
import warnings
from pathlib import Path

import optuna
from matplotlib.figure import Figure
from optuna.trial import TrialState

from dabench.runtime.sinks import write_bytes


def plot_history(study: optuna.Study, path: Path) -> None:
    """Objective per trial (dots), best so far (line), failed trials (red x on the x-axis)."""
    trials = study.get_trials(deepcopy=False)
    done = [(t.number, t.value) for t in trials if t.state == TrialState.COMPLETE]
    failed = [t.number for t in trials if t.state == TrialState.FAIL]
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    if done:
        xs, ys = zip(*done, strict=False)
        ax.scatter(xs, ys, s=18, label="complete trials")
        best_line = list(
            itertools.accumulate(ys, max if study.direction == optuna.study.StudyDirection.MAXIMIZE else min)
        )
        ax.step(xs, best_line, where="post", color="tab:orange", label="best so far")
    if failed:
        ax.scatter(failed, [0] * len(failed), marker="x", color="tab:red", label="failed (capacity, oom, ...)")
    ax.set(xlabel="trial number", ylabel="throughput (samples/s)")
    ax.set_title(f"Optimization history\n{study.study_name}", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    _save(fig, path)


def plot_importance(study: optuna.Study, path: Path) -> tuple[Path | None, str]:
    """Optuna's default importance evaluator over the parameters every completed trial shares
    and that varied (conditional parameters, e.g. stage weights of one pipeline depth, are left
    out). Returns (path, note); path is None, and the note says why, with fewer than 2 completed
    trials or no varied shared parameter."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < 2:
        return None, f"parameter importance skipped: {len(complete)} completed trial(s), needs 2"
    varied = [  # shared by every completed trial, and not one value throughout
        name
        for name in complete[0].params
        if all(name in t.params for t in complete) and len({repr(t.params[name]) for t in complete}) > 1
    ]
    if not varied:
        return None, "parameter importance skipped: no parameter shared by all completed trials varied"
    try:
        with warnings.catch_warnings():  # small studies: "some regimes have less than 2 trials"
            warnings.simplefilter("ignore", UserWarning)
            importances = optuna.importance.get_param_importances(study, params=varied)
    except (RuntimeError, ValueError) as error:
        return None, f"parameter importance skipped: {error}"
    names = list(importances)[::-1]
    fig = Figure(figsize=(8, 0.4 * len(names) + 1.8))
    ax = fig.subplots()
    ax.barh(names, [importances[n] for n in names])
    ax.set_xlabel("importance (Optuna's default evaluator, normalised to sum 1)")
    ax.set_title(f"Parameter importance, {len(complete)} completed trials\n{study.study_name}", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return path, f"parameter importance from {len(complete)} completed trials"


def _save(fig, path: Path) -> None:
    """The figure as PNG into the sweep folder (runtime/sinks.py: written whole)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    write_bytes("run_dir", path, buffer.getvalue())
