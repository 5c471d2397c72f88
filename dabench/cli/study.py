"""``python -m dabench study``: the best deployment a study found, as a ready-to-run command.

Exit status: 0 with a best deployment, 1 when no trial completed, 2 for bad input (a SQLite
storage that does not exist included: it reads, never creates). Secrets are masked.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from dabench.cli.args import Arg, Schema, parse_or_exit
from dabench.core.status import is_ok
from dabench.tracking.redact import redact_overrides, redact_text, redact_uri, redact_value
from dabench.tracking.store import sqlite_path
from dabench.tune.best import format_summary, summarize
from dabench.tune.study import MODE_ATTR, OVERRIDES_ATTR, REASON_ATTR, STATUS_ATTR

ARGS = Schema(
    "dabench study",
    __doc__.split("\n\n")[0],
    (
        Arg("--storage", "Optuna storage URL (default: sqlite:///./mlruns/optuna.db)"),
        Arg("--study", "study name (default: the only study in the storage)"),
        Arg("--list", "list the studies in the storage", "flag"),
        Arg("--top", "also show the N best trials", "int", default=0, low=0, high=100_000, metavar="N"),
        Arg("--json", "print the study summary as JSON", "flag"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    args = parse_or_exit(ARGS, argv)
    storage = args.storage or f"sqlite:///{Path.cwd() / 'mlruns' / 'optuna.db'}"
    db = sqlite_path(storage)
    if db is not None and not db.is_file():  # reading must not create it
        print(
            f"dabench study: no study storage at {db} (run a sweep from this folder first, or pass --storage URL)",
            file=sys.stderr,
        )
        return 2
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = optuna.get_all_study_summaries(storage, include_best_trial=True)
    names = [s.study_name for s in studies]
    if args.list:
        for s in studies:
            best = (
                f"best {s.best_trial.value:,.2f} (trial {s.best_trial.number})"
                if s.best_trial
                else "no completed trial"
            )
            print(f"{s.study_name}: {s.n_trials} trials, {best}")
        return 0
    name = args.study if args.study is not None or len(names) != 1 else names[0]
    if name is None:
        print(
            f"dabench study: --study is needed; studies in {redact_uri(storage)}: {', '.join(names) or 'none'}",
            file=sys.stderr,
        )
        return 2
    if name not in names:
        print(
            f"dabench study: invalid --study={name!r}: must be one of {', '.join(names) or '(no studies)'}",
            file=sys.stderr,
        )
        return 2
    study = optuna.load_study(study_name=name, storage=storage)
    summary = summarize(study)
    if args.json:
        print(redact_text(json.dumps(redact_value(summary.to_dict()), indent=1, default=str)))
    else:
        print(format_summary(summary))
        if args.top:
            from optuna.trial import TrialState

            ranked = sorted(
                study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)),
                key=lambda t: t.value,
                reverse=summary.direction == "maximize",
            )[: args.top]
            print(f"top {len(ranked)} trials:")
            for t in ranked:
                overrides = " ".join(shlex.quote(o) for o in redact_overrides(t.user_attrs.get(OVERRIDES_ATTR, [])))
                print(f"  #{t.number:<4d} {t.value:>12,.2f}  {t.user_attrs.get(MODE_ATTR, '')}  {overrides}")
        failed = [
            t
            for t in study.get_trials(deepcopy=False)
            if t.user_attrs.get(STATUS_ATTR) is not None and not is_ok(t.user_attrs.get(STATUS_ATTR))
        ]
        if failed and args.top:
            print(f"failed trials ({len(failed)}):")
            for t in failed[: args.top]:
                reason = (t.user_attrs.get(REASON_ATTR) or "\n").splitlines()[0][:120]
                print(f"  #{t.number:<4d} {t.user_attrs.get(STATUS_ATTR)}: {redact_text(reason)}")
    return 0 if summary.best_number is not None else 1
