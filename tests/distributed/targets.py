"""Tiny rank targets for launcher tests (stdlib only, so ranks start fast)."""

import os
import time


def echo(payload, env):
    return {
        "rank": env.rank,
        "world_size": env.world_size,
        "x": payload["x"],
        "pid": os.getpid(),
        "master": os.environ["MASTER_ADDR"],
    }


def rank1_raises(payload, env):
    if env.rank == 1:
        raise ValueError("rank one is unhappy")
    time.sleep(30)  # the launcher must not wait for this rank once rank 1 failed
    return {}


def rank0_exits_silently(payload, env):
    if env.rank == 0:
        os._exit(3)
    time.sleep(30)
    return {}


def sleeps(payload, env):
    time.sleep(60)
    return {}


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def zero_step_in_a_group(payload, env):
    """One DDP + ZeroRedundancyOptimizer step (async broadcasts on gloo's worker threads) inside
    dabench's process group; this process's thread count before the group and after it."""
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel

    from dabench.distributed.worker import process_group

    def step() -> int:  # like train.measure_rank: the wrappers are unreachable once it returns,
        model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)))
        optimizer = ZeroRedundancyOptimizer(model.parameters(), torch.optim.AdamW, lr=0.1)
        model.trainer = {"model": model, "optimizer": optimizer}  # but in a reference cycle, as a trainer's
        model(torch.ones(4, 8)).sum().backward()
        optimizer.step()
        return _threads()

    torch.set_num_threads(1)  # no intra-op pool growing meanwhile
    before = _threads()
    with process_group(env):
        during = step()
    return {"before": before, "during": during, "after": _threads()}
