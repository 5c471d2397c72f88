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
