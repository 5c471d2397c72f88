"""``dabench advise model=<name> tokens=<N> [platforms=...] [max_chips=K] [objective=time|energy|cost]``

Searches each platform's deployment space on PREDICTIONS of dabench's analytical models and
answers, per platform, with the best deployment as a command, its predicted throughput and time
to train N tokens (with bands), energy and cost estimates and the model's calibration. Prints a
ranked table, writes it as CSV and records an MLflow parent run with one child per platform's
winner. Details: docs/advise.md. The arguments are key=value words (``--help`` lists them), plus
any number of ``model.KEY=VALUE`` model overrides (e.g. model.n_layers=48), checked as a run's.

Exit status: 0 answered (even when a platform has no fitting deployment), 2 bad arguments.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import fields
from pathlib import Path

from dabench.advise.run import OBJECTIVES, Request
from dabench.cli.frame import arg, command
from dabench.config.fields import BOOL, CHOICE, INT, LIST, NUMBER, REQUIRED, TEXT, Spec
from dabench.config.schema import group_options
from dabench.core.platforms import accelerators, presets
from dabench.core.status import ConfigError
from dabench.tracking.naming import MAX_EXPERIMENT_CHARS

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
MAX_PRICE = 1e6  #: per chip- or system-hour, in any currency


def parse_tokens(text: str) -> float:
    """``3e11``, ``300B``, ``2.5T`` (K, M, B/G, T suffixes) -> tokens; ValueError otherwise."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0)


def _price(doc: str):
    return arg(NUMBER, doc, low=0, low_open=True, high=MAX_PRICE)


def request_of(args) -> Request:
    """The search request of the checked arguments; ConfigError for a cost objective without a price."""
    if "cost" in args.objective and args.price_per_chip_hour is None and args.price_per_system_hour is None:
        raise ConfigError(
            "objective", ",".join(args.objective), "cost needs price_per_chip_hour=P or price_per_system_hour=P"
        )
    same = {f.name: getattr(args, f.name) for f in fields(Request) if hasattr(args, f.name)}
    return Request(
        **same | {"platforms": list(args.platforms)}, model_overrides=args.overrides, objectives=list(args.objective)
    )


@command(
    "advise",
    __doc__.split("\n\n")[1],
    {
        "model": arg(CHOICE, "a model config (conf/model/NAME.yaml)", REQUIRED, choices=tuple(group_options("model"))),
        "tokens": arg(
            NUMBER,
            "tokens to train: 3e11, 300B, 2.5T (K, M, B/G, T suffixes)",
            REQUIRED,
            low=0,
            low_open=True,
            high=1e18,
            read=parse_tokens,
        ),
        "platforms": arg(
            LIST,
            "platforms and chip generations to search (cpu only if asked)",
            tuple(accelerators()),
            item=Spec(CHOICE, choices=presets()),
        ),
        "max_chips": arg(INT, "chips per deployment at most", 16, low=1, high=1_000_000),
        "objective": arg(LIST, "time,energy adds the Pareto set", ("time",), item=Spec(CHOICE, choices=OBJECTIVES)),
        "price_per_chip_hour": _price("price of one chip-hour (cost column)"),
        "price_per_system_hour": _price("price of one system-hour (a node of hardware.chips_per_node chips)"),
        "trials": arg(INT, "best layouts searched per platform and objective", 10, low=1, high=100_000),
        "seed": arg(INT, "recorded with the advice (the search is deterministic)", 0, low=0, high=2**32 - 1),
        "csv": arg(TEXT, "the ranked table as CSV (csv=- for stdout, csv=none for no file)", "advice.csv"),
        "record": arg(BOOL, "record in MLflow", True),
        "experiment": arg(TEXT, "MLflow experiment", "dabench", max_len=MAX_EXPERIMENT_CHARS),
        "tracking_uri": arg(TEXT, "MLflow store (default: dabench's store)"),
    },
    words=True,
    overrides="model.",
    exclusive=("price_per_chip_hour", "price_per_system_hour"),
    export="csv",
    writes={
        "exports": lambda args: args.csv.lower() != "none",
        "store": lambda args: args.record,
        "artifacts": lambda args: args.record,
    },
)
def main(args) -> int:
    request = request_of(args)
    csv = None if args.csv.lower() == "none" else args.csv
    from dabench.advise.answer import rows, table, write_csv
    from dabench.advise.run import advise, model_section

    started = time.perf_counter()
    try:
        model_section(request)  # what the schema cannot see (a model's own rules): one line, exit 2, nothing searched
    except Exception as error:  # Hydra's own override errors
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(" ".join(request.model_args()), None, first) from None

    if args.record:  # the store it will write, before the search (an unreachable server is no refusal: the outbox)
        from dabench.pipeline.preflight import UNREACHABLE, check_store
        from dabench.tracking.store import tracking_uri

        problems = check_store(tracking_uri(args.tracking_uri), "tracking_uri", 3.0)
        problem = next((p for p in problems if p.kind != UNREACHABLE), None)
        if problem:
            raise ConfigError(problem.field, problem.value, problem.fix)

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
    if csv == "-":
        write_csv(ranked, sys.stdout)
    elif csv is not None:
        write_csv(ranked, Path(csv))
        print(f"\ntable (CSV, PREDICTED): {csv}")
    if args.record:
        from dabench.advise.record import record

        parent = record(advice, ranked, experiment=args.experiment, uri=args.tracking_uri)
        print(
            f"MLflow: parent run {parent} (experiment {args.experiment}): one child per platform, "
            f"the whole search in its artifacts advice/; report: python -m dabench report {parent}"
        )
    print(f"advise: {advice.evaluations} deployments evaluated, {time.perf_counter() - started:.1f} s")
    return 0
