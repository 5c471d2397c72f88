"""The one command line: ``dabench [overrides] [-m]`` runs the Hydra task; ``dabench <command>``
runs a subcommand (its module's ``main``, declared on the command frame, cli/frame.py). A
subcommand is a bare word; an override has ``=`` or starts with ``+``, ``~`` or ``-``.
``python -m dabench`` and the ``dabench`` console script are the same entry.
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

from dabench.config.fields import did_you_mean
from dabench.runtime.quiet import install
from dabench.tracking.redact import install_log_redaction

#: subcommand -> (module whose ``main`` is its frame Command, one line of help). One registry: a later
#: command joins by adding its line here.
COMMANDS: dict[str, tuple[str, str]] = {
    "report": ("dabench.cli.report", "runs from MLflow -> one HTML report with figures, CSV"),
    "compare": ("dabench.cli.compare", "runs side by side, one column per run"),
    "grid": ("dabench.cli.grid", "a predict grid in one process (the same runs as -m, faster)"),
    "study": ("dabench.cli.study", "an Optuna study's best deployment, as a command line"),
    "findings": ("dabench.cli.findings", "the paper's findings: predicted, fitted or not reproduced by the models"),
    "fit": ("dabench.cli.fit", "refit the analytical models' fitted constants to published points"),
    "docs": ("dabench.cli.docs", "regenerate the docs' generated tables (--write), or check them (--check)"),
    "calibrate": ("dabench.cli.calibrate", "measure this machine's CPU ceilings (peak FLOP/s, bandwidth)"),
    "doctor": ("dabench.cli.doctor", "check the run store and studies; close runs left RUNNING"),
    "ingest": ("dabench.cli.ingest", "parse vendor artifacts (compile reports, PopVision, SambaFlow)"),
    "ui": ("dabench.cli.ui", "open the runs in MLflow's UI: key columns, model-training view"),
    "sync": ("dabench.cli.sync", "replay runs kept in the outbox while the tracking server was away"),
    "advise": ("dabench.cli.advise", "best PREDICTED deployment per platform to train a model on N tokens"),
}


def main(argv: Sequence[str] | None = None) -> int:
    command_line = [sys.argv[0], *(sys.argv[1:] if argv is None else argv)]
    install(command_line)  # third-party noise off unless -v (runtime/quiet.py); takes -v off the line
    install_log_redaction()  # every log record of every command is masked when created (tracking/redact.py)
    args = command_line[1:]
    if args and args[0] and "=" not in args[0] and args[0][0] not in "+~-":  # a bare word: a subcommand
        name = args[0]
        if name not in COMMANDS:
            print(
                f"dabench: unknown command {name!r}; {did_you_mean(name, COMMANDS)}Commands: {', '.join(COMMANDS)}; "
                "an override has '=' (key=value, group=option)",
                file=sys.stderr,
            )
            return 2
        module = importlib.import_module(COMMANDS[name][0])
        if "dabench.tracking.lifecycle" in sys.modules:  # only this command's runs count below
            sys.modules["dabench.tracking.lifecycle"].UNCLOSED.clear()
        code = module.main(args[1:])
        lifecycle = sys.modules.get("dabench.tracking.lifecycle")
        if lifecycle is not None and lifecycle.UNCLOSED:  # a run's end could not be written
            run_id, error = next(iter(lifecycle.UNCLOSED.items()))
            print(
                f"dabench {name}: MLflow run {run_id} could not be closed ({error}); it stays RUNNING until "
                "`dabench doctor` (or the next run) ends it",
                file=sys.stderr,
            )
            return max(code, 1)  # the next command clears UNCLOSED before it runs
        return code
    from dabench.cli.run import main as run_main

    return run_main(args)


def console() -> None:
    """The ``dabench`` console script."""
    sys.exit(main())
