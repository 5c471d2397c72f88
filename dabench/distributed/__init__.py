"""Measured Tier 2: data, tensor and pipeline parallelism on torch.distributed (gloo on CPU,
NCCL on GPUs). See docs/distributed.md.

- :mod:`.run`: ``run_parallel(rc, device, source) -> Profile``, the entry the backends call;
- :mod:`.launcher` / :mod:`.worker`: start N ranks, fail the whole job cleanly;
- :mod:`.train`: the rank side; :mod:`.dp`, :mod:`.tp`, :mod:`.pp`: the three strategies;
- :mod:`.commtime`: comm timing; :mod:`.assemble`: all ranks' figures -> one Profile;
- :mod:`.baseline`: the one-rank run with the same global batch.
"""

from __future__ import annotations


def run_parallel(rc, device, source):
    """See :func:`dabench.distributed.run.run_parallel` (imported lazily: it needs torch)."""
    from dabench.distributed.run import run_parallel as _run_parallel

    return _run_parallel(rc, device, source)


__all__ = ["run_parallel"]
