"""Advise's deployment space for Gaudi: the GPU family's layouts (platforms/gpu/space.py) over 8-chip
nodes, at the precisions whose matrix-engine peaks the presets source."""

from __future__ import annotations

from dabench.platforms.gpu.space import advise_space as gpu_space


def advise_space(space, args, config, chips):
    space = gpu_space(space, args, config, chips)
    space.precisions = ["bf16", "mixed"]
    return space
