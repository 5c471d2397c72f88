"""``python -m dabench study``: the best deployment a study found, as a ready-to-run command.

Exit status: 0 with a best deployment, 1 when no trial completed, 2 for bad input (a SQLite
storage that does not exist or holds no study tables included: it reads, never creates). Secrets
are masked.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import INT, TEXT
from dabench.core.status import ConfigError, is_ok
from dabench.tracking.redact import redact_overrides, redact_text, redact_uri, redact_value
from dabench.tracking.store import open_study_storage
from dabench.tune.best import format_summary, summarize
from dabench.tune.study import MODE_ATTR, OVERRIDES_ATTR, REASON_ATTR, STATUS_ATTR


@command(
    "study",
    __doc__.split("\n\n")[0],
    {
        "--storage": arg(TEXT, "Optuna storage URL (default: sqlite:///./mlruns/optuna.db)"),
        "--study": arg(TEXT, "study name (default: the only study in the storage)"),
        "--list": flag("list the studies in the storage"),
        "--top": arg(INT, "also show the N best trials", 0, low=0, high=100_000),
        "--json": flag("print the study summary as JSON"),
    },
)
def main(args) -> int:
    storage = args.storage or f"sqlite:///{Path.cwd() / 'mlruns' / 'optuna.db'}"
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    store = open_study_storage(storage)  # read-only: a missing file, or another kind of store, is one line
    studies = optuna.get_all_study_summaries(store, include_best_trial=True)
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
        raise ConfigError("--study", None, f"needed; studies in {redact_uri(storage)}: {', '.join(names)}")
    if name not in names:
        raise ConfigError("--study", name, f"must be one of {', '.join(names) or '(no studies)'}")
    study = optuna.load_study(study_name=name, storage=store)
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
    return 0 if summary.best is not None else 1
