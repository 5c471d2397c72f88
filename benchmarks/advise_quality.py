"""Does `dabench advise` find the best deployment? For each model, chip budget and platform preset
it compares advise's answer (its search, timed) with the exhaustive best of the same space (every
deployment predicted), on the time objective. Every number is PREDICTED.

    python benchmarks/advise_quality.py [--models gpt2_xl,llama_7b,gpt_13b,llama_70b]
        [--chips 8,64,1024] [--platforms cuda,b200,...] [--trials 10]

One line per case (gap = 1 - advise's tokens/s / the exhaustive best's; 0 where neither fits);
last line ``advise_gap_max=<f> advise_s_max=<f>`` (issue 42, item 9: gap <= 0.01, each answer
under 15 s on the 2-core machine). The exhaustive search of the whole matrix takes hours.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from dabench.core.platforms import accelerators

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="gpt2_xl,llama_7b,gpt_13b,llama_70b")
    parser.add_argument("--chips", default="8,64,1024")
    parser.add_argument("--platforms", default=",".join(accelerators()))
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    from dabench.runtime.quiet import install

    install([sys.argv[0]])
    from dabench.advise.run import Request, evaluator, model_section
    from dabench.advise.search import search

    gaps, seconds = [], []
    for model_name in args.models.split(","):
        model = model_section(Request(model_name, 1.0))
        for chips in (int(c) for c in args.chips.split(",")):
            for platform in args.platforms.split(","):
                predictor = evaluator(platform, model, chips)
                started = time.perf_counter()
                found = search(predictor.space, predictor, "time", args.trials)
                took = time.perf_counter() - started
                searched = len(predictor.cache)
                for precision, values in predictor.space.grid():
                    predictor(precision, values)
                best = max((e for e in predictor.cache.values() if e.ok), key=lambda e: e.tokens_per_s, default=None)
                if best is None or found is None:  # none fits anywhere, or advise missed every fit
                    gap = 0.0 if best is None else 1.0
                else:
                    gap = 1.0 - found.tokens_per_s / best.tokens_per_s
                gaps.append(gap)
                seconds.append(took)
                print(
                    f"{model_name} chips={chips} {platform}: gap {gap:.4f}, advise {took:.1f} s "
                    f"({searched} of {len(predictor.cache)} deployments), best "
                    f"{'none fits' if best is None else f'{best.tokens_per_s:.4g} tokens/s'}",
                    flush=True,
                )
    print(f"advise_gap_max={max(gaps):.4f} advise_s_max={max(seconds):.2f}")


if __name__ == "__main__":
    main()
