"""The rank side of a measured parallel run: set up, warm up, time, measure, report.
``train_rank(payload, env)`` returns the rank's figures and every step's loss as a JSON-able dict;
rank 0 then runs the one-rank baseline (:func:`run_baseline`): the same global batch on one rank,
with one rank's threads, for Tier-2 scaling efficiency and the loss-equivalence check.
"""

from __future__ import annotations

import os
import resource
from dataclasses import asdict, replace
from typing import Any

import torch
import torch.distributed as dist

from dabench.backends.measure import CudaClock, HostClock
from dabench.backends.torch_train import build_train_state
from dabench.config.build import build_run_config
from dabench.config.sections import ParallelConfig, RunConfig
from dabench.distributed.commtime import IntervalLog
from dabench.distributed.context import RankContext, Trainer
from dabench.distributed.dp import build_dp
from dabench.distributed.fsdp import build_fsdp
from dabench.distributed.worker import RankEnv, process_group
from dabench.runtime.faults import rank_fault


def build_trainer(ctx: RankContext) -> Trainer:
    """The strategy's trainer on the right DeviceMesh (tensor and pipeline parallelism imported only
    where used: torch's DTensor and pipelining cost a rank 0.6 and 1.1 s to import)."""
    from torch.distributed.device_mesh import init_device_mesh

    par = ctx.rc.parallel
    if par.strategy == "dp":
        return build_dp(ctx)
    if par.strategy == "fsdp":
        return build_fsdp(ctx)
    if par.strategy == "tp":
        from dabench.distributed.tp import TensorParallelTrainer

        return TensorParallelTrainer.build(
            ctx, init_device_mesh(ctx.device.type, (par.degree,), mesh_dim_names=("tp",))
        )
    # pp (the schema admits no other strategy, and strategy none never starts ranks)
    from dabench.distributed.pp import PipelineTrainer

    mesh = init_device_mesh(ctx.device.type, (par.replicas, par.degree), mesh_dim_names=("dp", "pp"))
    return PipelineTrainer.build(ctx, mesh)


def peak_memory_bytes(device: torch.device) -> float:
    """CUDA: peak bytes allocated by torch on this rank's GPU; CPU: peak resident set size of
    the rank process (interpreter and libraries included)."""
    if device.type == "cuda":
        return float(torch.cuda.max_memory_allocated(device))
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def _device(device_type: str, env: RankEnv) -> torch.device:
    if device_type == "cuda":
        torch.cuda.set_device(env.local_rank)
        return torch.device("cuda", env.local_rank)
    return torch.device("cpu")


def train_rank(payload: dict[str, Any], env: RankEnv) -> dict[str, Any]:
    """The rank's job, inside its process group; rank 0 then runs the baseline on its own."""
    rc = build_run_config(payload["rc"])
    threads = int(payload["threads_per_rank"])
    torch.set_num_threads(threads)
    device = _device(payload["device_type"], env)
    clock = CudaClock(device) if device.type == "cuda" else HostClock()
    with process_group(env, device):
        result = measure_rank(rc, env, device, clock)
    result["threads"] = threads
    if env.rank == 0 and payload.get("baseline", True):
        result["baseline"] = run_baseline(rc, device, clock)
    return result


def measure_rank(rc: RunConfig, env: RankEnv, device: torch.device, clock) -> dict[str, Any]:
    """Build the trainer, warm up, time ``run.timed_steps`` and report (every rank in the group)."""
    ctx = RankContext(rc, env.rank, env.world_size, device, clock, IntervalLog(clock))
    trainer = build_trainer(ctx)
    warmup, timed = rc.run.warmup_steps, rc.run.timed_steps
    losses, marks = [], []
    for step in range(warmup + timed):
        rank_fault(env.rank, step)
        if step == warmup:
            clock.synchronize()
            dist.barrier()
            ctx.log.clear()
        ctx.log.step = step - warmup if step >= warmup else None
        start = clock.mark()
        loss = trainer.step()
        end = clock.mark()
        losses.append(loss)
        if step >= warmup:
            marks.append((start, end))
    ctx.log.step = None
    clock.synchronize()
    result: dict[str, Any] = {
        "rank": env.rank,
        "strategy": trainer.strategy,
        "role": trainer.role,
        "pid": os.getpid(),
        "losses": [None if loss is None else float(loss) for loss in losses],
        "step_s": [clock.elapsed(a, b) for a, b in marks],
        "intervals": [asdict(i) for i in ctx.log.resolve()],
    }
    result.update(trainer.after_timed())
    result["peak_memory_bytes"] = peak_memory_bytes(device)
    dist.barrier()
    return result


def run_baseline(rc: RunConfig, device: torch.device, clock) -> dict[str, Any]:
    """Losses of all (warm-up + timed) steps and the timed step times of the one-rank run."""
    # the one-rank run with the same global batch per optimizer step as ``rc``
    single = replace(rc, parallel=ParallelConfig(), run=replace(rc.run, batch_size=rc.run.batch_size * rc.data_copies))
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
