"""Harness overhead: dabench's measured CPU run against a plain hand-written training loop of the
same model and batch, side by side in one process.

Both sides build the same seeded DecoderStack, AdamW and synthetic batch. The harness side is
`dabench.pipeline.execute.execute` (validation, op graph, the timed window, metrics; per-layer profiling
off, since it runs after the timed window anyway); the plain side is a bare loop timed with
perf_counter. Rounds alternate which side goes first; each round's ratio compares two runs made
seconds apart, and the figure is the median of the per-round ratios (robust to load that comes
and goes on a shared machine).

    python benchmarks/overhead.py [--model tiny] [--batch 4] [--steps 30] [--rounds 5]

Last line: ratio=<median over rounds of harness samples/s / plain samples/s> (target >= 0.97).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from dabench.backends.torch_train import adamw_eps
from dabench.config.build import build_run_config
from dabench.pipeline.execute import execute
from dabench.runtime.interrupts import in_worker
from dabench.workload.model import DecoderStack, synthetic_batch

CONF = Path(__file__).resolve().parents[1] / "conf"


def harness_samples_per_s(rc) -> float:
    result = execute(rc)
    if result.status.value not in ("ok", "unsteady"):  # unsteady: disturbed, but both sides run side by side
        raise SystemExit(f"harness run failed: {result.status.value}: {result.reason}")
    return result.metrics["throughput.samples_per_s"]


def plain_samples_per_s(rc) -> float:
    """The plain loop, in a worker thread as the harness's steps are: two threads that both run
    torch's OpenMP regions in one process throttle each other (docs/reliability.md, "3b")."""
    return in_worker(lambda: _plain_loop(rc), "plain-loop")


def _plain_loop(rc) -> float:
    torch.manual_seed(rc.run.seed)
    model = DecoderStack.from_config(rc.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=rc.run.lr, eps=adamw_eps("fp32"))
    ids, targets = synthetic_batch(rc.run.batch_size, rc.model.seq_len, rc.model.vocab_size, rc.run.seed)

    def step():
        loss = model(ids, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(rc.run.warmup_steps):
        step()
    times = []
    for _ in range(rc.run.timed_steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return rc.run.batch_size / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose(
            "config",
            overrides=[
                f"model={args.model}",
                f"run.batch_size={args.batch}",
                f"run.timed_steps={args.steps}",
                "run.warmup_steps=3",
                "run.profile_subtasks=false",
                "tracking.enabled=false",
            ],
        )
    rc = build_run_config(OmegaConf.to_container(cfg, resolve=True))
    print(
        f"model={rc.model.name} batch={rc.run.batch_size} steps={args.steps} rounds={args.rounds} "
        f"threads={torch.get_num_threads()}"
    )
    harness, plain = [], []
    for i in range(args.rounds):
        if i % 2 == 0:
            harness.append(harness_samples_per_s(rc))
            plain.append(plain_samples_per_s(rc))
        else:
            plain.append(plain_samples_per_s(rc))
            harness.append(harness_samples_per_s(rc))
        print(f"round {i}: harness {harness[-1]:.1f} samples/s  plain {plain[-1]:.1f} samples/s")
    print(f"harness_samples_per_s={statistics.median(harness):.2f}")
    print(f"plain_samples_per_s={statistics.median(plain):.2f}")
    print(f"ratio={statistics.median(h / p for h, p in zip(harness, plain, strict=False)):.3f}")


if __name__ == "__main__":
    main()
