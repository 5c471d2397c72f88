"""``run_parallel``: a measured data/tensor/pipeline-parallel run on torch.distributed.
It checks what this machine and torch can run, starts the ranks, and returns ONE Profile (ranks
never write to MLflow). A failed, killed or hung rank becomes
:class:`~dabench.core.status.CrashedError` (or :class:`~dabench.core.status.OutOfMemory`) naming it.
"""

from __future__ import annotations

import os

import torch

from dabench.config.sections import RunConfig
from dabench.core.profile import Profile, UnitUse
from dabench.core.status import ConfigError, CrashedError, OutOfMemory, UnsupportedError
from dabench.distributed.assemble import assemble_profile
from dabench.distributed.launcher import RankFailure, launch

TRAIN_TARGET = "dabench.distributed.train:train_rank"


def check_supported(rc: RunConfig, device: torch.device) -> None:
    """Refuse, before any rank starts, what cannot run here (with the reason)."""
    import torch.distributed as dist

    par = rc.parallel
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        raise UnsupportedError(
            f"this process already is rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} (torchrun?): dabench "
            "starts its own ranks; run `python -m dabench ...` once, without torchrun (the rank worker itself, "
            "`python -m dabench.distributed.worker`, is what torchrun-style launchers can start)"
        )
    if not dist.is_available():
        raise UnsupportedError("torch.distributed is not available in this torch build")
    if device.type == "cuda":
        if par.n_chips > torch.cuda.device_count():
            raise UnsupportedError(
                f"parallel.degree * parallel.replicas = {par.n_chips} GPUs requested, "
                f"{torch.cuda.device_count()} visible (one rank per GPU)"
            )
        if not dist.is_nccl_available():
            raise UnsupportedError("parallel runs on cuda need NCCL, which this torch build lacks")
    elif not dist.is_gloo_available():
        raise UnsupportedError("parallel runs on cpu need the gloo backend, which this torch build lacks")
    if par.strategy == "fsdp":
        try:
            from torch.distributed.fsdp import fully_shard  # noqa: F401
        except ImportError:
            raise UnsupportedError(
                f"parallel=fsdp needs torch's FSDP2 (torch.distributed.fsdp.fully_shard), absent from torch "
                f"{torch.__version__}"
            ) from None
    if par.strategy == "tp" and par.replicas > 1:
        raise UnsupportedError(
            "parallel=tp with parallel.replicas > 1 (DP x TP) is not measured: DDP does not take DTensor "
            "parameters and torch's replicate-with-DTensor API is private; use parallel=pp with replicas "
            "(DP x PP) or parallel=dp"
        )
    if par.strategy == "pp":
        if not par.head_on_last:
            raise UnsupportedError(
                "parallel.head_on_last=false (LM head on stage 0) is not measured: torch.distributed.pipelining's "
                "single-stage schedules need the loss on the last stage"
            )
        if rc.run.batch_size % par.micro_batches:
            raise ConfigError(
                "parallel.micro_batches",
                par.micro_batches,
                f"must divide run.batch_size={rc.run.batch_size} (each micro-batch is batch_size / micro_batches)",
            )
        if 0 in par.layers_per_stage:
            raise ConfigError(
                "parallel.layers_per_stage",
                list(par.layers_per_stage),
                "every stage needs at least one decoder layer for a measured pipeline",
            )


def threads_per_rank(rc: RunConfig, device: torch.device) -> int:
    """``run.threads`` if set, else on a CPU the cores shared evenly by the ranks (at least 1),
    else 1 (a GPU rank's host thread)."""

    if rc.run.threads:
        return rc.run.threads
    if device.type == "cpu":
        return max(1, (os.cpu_count() or 1) // rc.parallel.n_chips)
    return 1


def rank_units(rc: RunConfig, device: torch.device, threads: int) -> dict[str, UnitUse]:
    """cpu: cores used by all ranks out of this machine's; cuda: GPUs used out of those visible."""
    if device.type == "cuda":
        return {"gpus": UnitUse(rc.parallel.n_chips, torch.cuda.device_count())}
    return {"cores": UnitUse(min(rc.parallel.n_chips * threads, os.cpu_count() or 1), os.cpu_count() or 1)}


def run_ranks(rc: RunConfig, device: torch.device, baseline: bool = True) -> list[dict]:
    """Start the ranks and return their reports (rank order); raises CrashedError/OutOfMemory."""
    check_supported(rc, device)
    payload = {
        "rc": rc.to_dict(),
        "device_type": device.type,
        "threads_per_rank": threads_per_rank(rc, device),
        "baseline": baseline,
    }
    try:
        return launch(
            TRAIN_TARGET, payload, rc.parallel.n_chips, rc.parallel.timeout_s, init_method=rc.parallel.init_method
        )
    except RankFailure as failure:
        reason = f"parallel={rc.parallel.strategy} on {rc.parallel.n_chips} ranks: {failure.reason}"
        if "OutOfMemoryError" in failure.reason:
            raise OutOfMemory(reason[:2000]) from None
        raise CrashedError(reason) from None


def run_parallel(rc: RunConfig, device: torch.device, source: str) -> Profile:
    """Measure ``rc`` on ``parallel.degree * parallel.replicas`` ranks; one Profile for all."""
    results = run_ranks(rc, device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    source = f"{source} ({backend}, {rc.parallel.n_chips} ranks)"
    units = rank_units(rc, device, results[0]["threads"])
    return assemble_profile(rc, results, source, rc.hardware.memory[0].name, units, backend)
