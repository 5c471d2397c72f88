"""How long `dabench advise` takes: GPT-2 XL and a 7B decoder (llama_7b) across every platform
preset but cpu (families and chip generations), search and MLflow recording included (a parent run
with one child per platform and the search as artifacts, per model), in one process as the CLI
runs it. Target: under 60 s on the 2-core machine. Every number it finds is PREDICTED.

    python benchmarks/advise_speed.py [--trials 10] [--uri sqlite:///...]

The MLflow store is a fresh SQLite file in a temporary folder unless --uri is given (its schema
creation, a few seconds, is timed too). Last line: ``advise_s=<s> evaluations=<n>``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--tokens", type=float, default=3e11)
    parser.add_argument("--max-chips", type=int, default=16)
    parser.add_argument("--uri", default=None)
    args = parser.parse_args()
    from dabench.runtime.quiet import install

    install([sys.argv[0]])
    started = time.perf_counter()
    from dabench.advise.answer import rows, table
    from dabench.advise.record import record
    from dabench.advise.run import Request, advise

    evaluations = 0
    with tempfile.TemporaryDirectory() as tmp:
        uri = args.uri or f"sqlite:///{tmp}/mlflow.db"
        for model in ("gpt2_xl", "llama_7b"):
            t0 = time.perf_counter()
            advice = advise(Request(model=model, tokens=args.tokens, max_chips=args.max_chips, trials=args.trials))
            ranked = rows(advice)
            t1 = time.perf_counter()
            parent = record(advice, ranked, experiment="advise-speed", uri=uri)
            t2 = time.perf_counter()
            evaluations += advice.evaluations
            print(table(advice, ranked).split("\n\n")[0])
            print(
                f"{model}: search {t1 - t0:.1f} s, MLflow {t2 - t1:.1f} s (parent {parent}), "
                f"{advice.evaluations} evaluations\n"
            )
    print(f"advise_s={time.perf_counter() - started:.1f} evaluations={evaluations}")


if __name__ == "__main__":
    main()
