"""Measured Tier 2: data, tensor and pipeline parallelism on torch.distributed (gloo on CPU,
NCCL on GPUs). The entry is :func:`dabench.distributed.run.run_parallel` ``(rc, device, source) ->
Profile`` (import it where it is called: it needs torch); the modules are listed in
docs/distributed.md.
"""
