"""Measured Tier 2: data, tensor and pipeline parallelism on torch.distributed (gloo on CPU,
NCCL on GPUs). The entry is ``run_parallel(rc, device, source) -> Profile``; the modules are
listed in docs/distributed.md.
"""

from __future__ import annotations


def run_parallel(rc, device, source):
    """See :func:`dabench.distributed.run.run_parallel` (imported lazily: it needs torch)."""
    from dabench.distributed.run import run_parallel as _run_parallel

    return _run_parallel(rc, device, source)


__all__ = ["run_parallel"]
