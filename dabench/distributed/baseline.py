"""The one-rank baseline: the same global batch on one rank, for Tier-2 scaling efficiency and
for the loss-equivalence check.
Rank 0 runs it after the parallel job, with one rank's threads (docs/distributed.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from dabench.backends.torch_train import build_train_state
from dabench.config.sections import ParallelConfig, RunConfig


def baseline_config(rc: RunConfig) -> RunConfig:
    """The one-rank run with the same global batch per optimizer step as ``rc``."""
    return replace(rc, parallel=ParallelConfig(), run=replace(rc.run, batch_size=rc.run.batch_size * rc.data_copies))


def run_baseline(rc: RunConfig, device: torch.device, clock) -> dict[str, Any]:
    """Losses of all (warm-up + timed) steps and the timed step times of the one-rank run."""
    single = baseline_config(rc)
    state = build_train_state(single, device)
    losses, marks = [], []
    for step in range(rc.run.warmup_steps + rc.run.timed_steps):
        start = clock.mark()
        loss = state.step()
        end = clock.mark()
        losses.append(loss.detach())
        if step >= rc.run.warmup_steps:
            marks.append((start, end))
    clock.synchronize()
    return {
        "step_s": [clock.elapsed(a, b) for a, b in marks],
        "losses": [float(x) for x in losses],
        "samples_per_step": single.samples_per_step,
    }
