"""``dabench advise model=<name> tokens=<N> [platforms=...] [max_chips=K] [objective=time|energy|cost]``

Searches each platform's deployment space on PREDICTIONS of dabench's analytical models and
answers, per platform, with the best deployment as a command, its predicted throughput and time
to train N tokens (with bands), energy and cost estimates and the model's calibration. Prints a
ranked table, writes it as CSV and records an MLflow parent run with one child per platform's
winner. Details: docs/advise.md.

Arguments (key=value words):
  model=NAME              a model config (conf/model/NAME.yaml): gpt2_xl, llama_7b, ...
  model.KEY=VALUE         model overrides, e.g. model.n_layers=48 (any number of them)
  tokens=N                tokens to train: 3e11, 300B, 2.5T (K, M, B/G, T suffixes)
  platforms=A,B           among cpu, cuda, wse2, rdu, ipu (default cuda,wse2,rdu,ipu; cpu only if asked)
  max_chips=K             chips per deployment at most (default 16)
  objective=O[,O2]        time (default), energy, cost; time,energy adds the Pareto set
  price_per_chip_hour=P   price of one chip-hour (cost column); or
  price_per_system_hour=P price of one system-hour (a node of hardware.chips_per_node chips)
  trials=N                Optuna trials per platform and objective (default 100)
  seed=N                  sampler seed (default 0)
  csv=PATH                the ranked table as CSV (default ./advice.csv; csv=- for stdout, csv=none for no file)
  record=true|false       record in MLflow (default true)
  experiment=NAME         MLflow experiment (default dabench); tracking_uri=URI (default: dabench's store)

Exit status: 0 answered (even when a platform has no fitting deployment), 2 bad arguments.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Sequence

PLATFORMS = ("cpu", "cuda", "wse2", "rdu", "ipu")
DEFAULT_PLATFORMS = ("cuda", "wse2", "rdu", "ipu")
KEYS = (
    "model",
    "tokens",
    "platforms",
    "max_chips",
    "objective",
    "price_per_chip_hour",
    "price_per_system_hour",
    "trials",
    "seed",
    "csv",
    "record",
    "experiment",
    "tracking_uri",
)
_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


class ArgError(ValueError):
    def __init__(self, key: str, value: str, valid: str):
        super().__init__(f"{key}={value}: {valid}")


def parse_tokens(text: str) -> float:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*", text)
    if not m:
        raise ArgError("tokens", text, "a positive number of tokens, e.g. 3e11, 300B, 2.5T")
    value = float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0)
    if not value > 0:
        raise ArgError("tokens", text, "a positive number of tokens, e.g. 3e11, 300B, 2.5T")
    return value


def _positive(key: str, text: str, kind=int):
    try:
        value = kind(text)
    except ValueError:
        raise ArgError(key, text, f"a positive {'integer' if kind is int else 'number'}") from None
    if not value > 0:
        raise ArgError(key, text, f"a positive {'integer' if kind is int else 'number'}")
    return value


def parse_args(argv: Sequence[str]):
    from dabench.advise.run import OBJECTIVES, Request
    from dabench.config.paths import CONF_DIR

    words: dict[str, str] = {}
    model_overrides: list[str] = []
    for word in argv:
        key, sep, value = word.partition("=")
        if not sep:
            raise ArgError(word, "", "arguments are key=value words; valid keys: " + ", ".join(KEYS) + ", model.KEY")
        if key.startswith("model."):
            model_overrides.append(word)
            continue
        if key not in KEYS:
            import difflib

            close = difflib.get_close_matches(key, KEYS, n=1)
            raise ArgError(
                key,
                value,
                (f"unknown argument; did you mean {close[0]}? " if close else "unknown argument; ")
                + "valid: "
                + ", ".join(KEYS)
                + ", model.KEY",
            )
        words[key] = value
    if "model" not in words:
        raise ArgError("model", "", "required: a model config name, e.g. model=gpt2_xl")
    models = sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))
    if words["model"] not in models:
        raise ArgError("model", words["model"], "a model config; valid: " + ", ".join(models))
    if "tokens" not in words:
        raise ArgError("tokens", "", "required: the tokens to train, e.g. tokens=300B")
    platforms = [p for p in words.get("platforms", ",".join(DEFAULT_PLATFORMS)).split(",") if p]
    for p in platforms:
        if p not in PLATFORMS:
            raise ArgError("platforms", words["platforms"], f"unknown platform {p!r}; valid: " + ", ".join(PLATFORMS))
    if not platforms:
        raise ArgError("platforms", words.get("platforms", ""), "at least one of " + ", ".join(PLATFORMS))
    objectives = [o for o in words.get("objective", "time").split(",") if o]
    for o in objectives:
        if o not in OBJECTIVES:
            raise ArgError(
                "objective", words["objective"], f"unknown objective {o!r}; valid: time, energy, cost (or time,energy)"
            )
    if not objectives or len(set(objectives)) != len(objectives):
        raise ArgError("objective", words.get("objective", ""), "time, energy or cost, each at most once")
    price_chip = (
        _positive("price_per_chip_hour", words["price_per_chip_hour"], float)
        if "price_per_chip_hour" in words
        else None
    )
    price_sys = (
        _positive("price_per_system_hour", words["price_per_system_hour"], float)
        if "price_per_system_hour" in words
        else None
    )
    if price_chip is not None and price_sys is not None:
        raise ArgError(
            "price_per_system_hour",
            words["price_per_system_hour"],
            "give price_per_chip_hour or price_per_system_hour, not both",
        )
    if "cost" in objectives and price_chip is None and price_sys is None:
        raise ArgError("objective", words["objective"], "cost needs price_per_chip_hour=P or price_per_system_hour=P")
    record = words.get("record", "true").lower()
    if record not in ("true", "false"):
        raise ArgError("record", words["record"], "true or false")
    request = Request(
        model=words["model"],
        tokens=parse_tokens(words["tokens"]),
        model_overrides=model_overrides,
        platforms=platforms,
        max_chips=_positive("max_chips", words.get("max_chips", "16")),
        objectives=objectives,
        price_per_chip_hour=price_chip,
        price_per_system_hour=price_sys,
        trials=_positive("trials", words.get("trials", "100")),
        seed=int(words.get("seed", "0"))
        if words.get("seed", "0").lstrip("-").isdigit()
        else (_ for _ in ()).throw(ArgError("seed", words["seed"], "an integer")),
    )
    return request, {
        "csv": words.get("csv", "advice.csv"),
        "record": record == "true",
        "experiment": words.get("experiment", "dabench"),
        "uri": words.get("tracking_uri"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    try:
        request, options = parse_args(argv)
    except ArgError as error:
        print(f"dabench advise: {error}", file=sys.stderr)
        return 2
    if options["csv"] not in ("-",) and options["csv"].lower() != "none":  # before any work
        from dabench.pipeline.preflight import check_sink, format_problems

        problems = check_sink("exports", Path(options["csv"]), "csv")
        if problems:
            print(format_problems(problems), file=sys.stderr)
            return 2
    from dabench.advise.answer import rows, table, write_csv
    from dabench.advise.run import advise, model_section
    from dabench.core.status import DabenchError

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
        from dabench.runtime.sinks import one_line

        try:
            write_csv(ranked, Path(options["csv"]))
        except OSError as error:
            print(f"dabench advise: {one_line(error)}", file=sys.stderr)
            return 1
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


if __name__ == "__main__":
    sys.exit(main())
