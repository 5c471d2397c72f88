"""One folder per platform family: its model, knobs, backend or vendor runner, artifact parser,
deployment space, power figure and fit bounds; each folder's ``__init__`` declares its
:class:`~dabench.core.platforms.Platform` as ``PLATFORM`` and imports nothing heavy (vendor runners
import it under the SDK's Python 3.8). Adding one: docs/platforms.md.
"""

from dabench.platforms import cpu, gaudi, gpu, ipu, rdu, wse

#: the in-tree platforms, in the order they are listed
IN_TREE = (cpu.PLATFORM, gpu.PLATFORM, wse.PLATFORM, rdu.PLATFORM, ipu.PLATFORM, gaudi.PLATFORM)
