"""``dabench advise model=<name> tokens=<N> [platforms=...] [max_chips=K] [objective=time|energy|cost]``

Searches each platform's deployment space on PREDICTIONS of dabench's analytical models and
answers, per platform, with the best deployment as a command, its predicted throughput and time
to train N tokens (with bands), energy and cost estimates and the model's calibration. Prints a
ranked table, writes it as CSV and records an MLflow parent run with one child per platform's
winner. Details: docs/advise.md. The arguments are key=value words (``ARGS``; ``--help`` lists
them), plus any number of ``model.KEY=VALUE`` model overrides (e.g. model.n_layers=48).

Exit status: 0 answered (even when a platform has no fitting deployment), 2 bad arguments.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Sequence

from dabench.cli.args import Arg, ArgError, Schema, parse, words_help
from dabench.config.schema import group_options
from dabench.core.platforms import accelerators, names
from dabench.core.status import DabenchError
from dabench.pipeline.preflight import check_sink, format_problems

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
MAX_PRICE = 1e6  #: per chip- or system-hour, in any currency


def parse_tokens(text: str) -> float:
    """``3e11``, ``300B``, ``2.5T`` (K, M, B/G, T suffixes) -> tokens; ValueError otherwise."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0)


def _objectives() -> tuple[str, ...]:
    from dabench.advise.run import OBJECTIVES

    return OBJECTIVES


ARGS = Schema(
    "dabench advise",
    __doc__.split("\n\n")[1],
    (
        Arg(
            "model",
            "a model config (conf/model/NAME.yaml)",
            "choice",
            choices=lambda: group_options("model"),
            required=True,
            metavar="NAME",
        ),
        Arg(
            "tokens",
            "tokens to train: 3e11, 300B, 2.5T (K, M, B/G, T suffixes)",
            "float",
            low=0,
            above=True,
            high=1e18,
            convert=parse_tokens,
            required=True,
            metavar="N",
        ),
        Arg(
            "platforms",
            "platforms to search (cpu only if asked)",
            "list",
            default=list(accelerators()),
            choices=names(),
            metavar="A,B",
        ),
        Arg("max_chips", "chips per deployment at most", "int", default=16, low=1, high=1_000_000, metavar="K"),
        Arg("objective", "time,energy adds the Pareto set", "list", default=["time"], choices=_objectives, metavar="O"),
        Arg("price_per_chip_hour", "price of one chip-hour (cost column)", "float", low=0, above=True, high=MAX_PRICE),
        Arg(
            "price_per_system_hour",
            "price of one system-hour (a node of hardware.chips_per_node chips)",
            "float",
            low=0,
            above=True,
            high=MAX_PRICE,
        ),
        Arg("trials", "Optuna trials per platform and objective", "int", default=100, low=1, high=100_000),
        Arg("seed", "sampler seed", "int", default=0, low=0, high=2**32 - 1),
        Arg("csv", "the ranked table as CSV (csv=- for stdout, csv=none for no file)", default="advice.csv"),
        Arg("record", "record in MLflow", "choice", default="true", choices=("true", "false")),
        Arg("experiment", "MLflow experiment", default="dabench"),
        Arg("tracking_uri", "MLflow store (default: dabench's store)", metavar="URI"),
    ),
    words=True,
    passthrough="model.",
)


def parse_args(argv: Sequence[str]):
    """(Request, options) of ``argv``; ArgError (one line) for a bad argument."""
    from dabench.advise.run import Request

    args = parse(ARGS, argv)
    if args.price_per_chip_hour is not None and args.price_per_system_hour is not None:
        raise ArgError(
            "price_per_system_hour",
            str(args.price_per_system_hour),
            "give price_per_chip_hour or price_per_system_hour, not both",
        )
    if "cost" in args.objective and args.price_per_chip_hour is None and args.price_per_system_hour is None:
        raise ArgError(
            "objective", ",".join(args.objective), "cost needs price_per_chip_hour=P or price_per_system_hour=P"
        )
    same = {f.name: getattr(args, f.name) for f in fields(Request) if hasattr(args, f.name)}
    request = Request(**same, model_overrides=args.passthrough, objectives=args.objective)
    return request, {
        "csv": args.csv,
        "record": args.record == "true",
        "experiment": args.experiment,
        "uri": args.tracking_uri,
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(words_help(ARGS))
        return 0
    try:
        request, options = parse_args(argv)
    except ArgError as error:
        print(f"dabench advise: {error}", file=sys.stderr)
        return 2
    if options["csv"] != "-" and options["csv"].lower() != "none":  # before any work
        problems = check_sink("exports", Path(options["csv"]), "csv")
        if problems:
            print(format_problems(problems), file=sys.stderr)
            return 2
    from dabench.advise.answer import rows, table, write_csv
    from dabench.advise.run import advise, model_section

    started = time.perf_counter()
    try:
        model_section(request)  # a bad model override: one line, exit 2, nothing searched
    except DabenchError as error:
        print(f"dabench advise: {error.reason if hasattr(error, 'reason') else error}", file=sys.stderr)
        return 2
    except Exception as error:  # Hydra's own override errors
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"dabench advise: {' '.join(request.model_args())}: {first}", file=sys.stderr)
        return 2

    def progress(outcome) -> None:
        state = "best found" if outcome.best is not None else "none fits"
        print(
            f"dabench advise: {outcome.platform}: {len(outcome.evaluations)} deployments evaluated, {state} "
            f"({outcome.seconds:.1f} s)",
            file=sys.stderr,
        )

    advice = advise(request, on_platform=progress)
    ranked = rows(advice)
    print(table(advice, ranked))
    if options["csv"] == "-":
        write_csv(ranked, sys.stdout)
    elif options["csv"].lower() != "none":
        write_csv(ranked, Path(options["csv"]))
        print(f"\ntable (CSV, PREDICTED): {options['csv']}")
    if options["record"]:
        from dabench.advise.record import record

        parent = record(advice, ranked, experiment=options["experiment"], uri=options["uri"])
        print(
            f"MLflow: parent run {parent} (experiment {options['experiment']}): one child per platform, "
            f"the whole search in its artifacts advice/; report: python -m dabench report {parent}"
        )
    print(f"advise: {advice.evaluations} deployments evaluated, {time.perf_counter() - started:.1f} s")
    return 0
