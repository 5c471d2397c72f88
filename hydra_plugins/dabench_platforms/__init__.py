"""Adds the config folder of every platform an installed distribution registers
(:class:`~dabench.core.platforms.Platform` ``conf``: its ``hardware/<name>.yaml`` presets) to
Hydra's search path, after dabench's own conf/; in-tree platforms keep their presets in conf/."""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from dabench.core.platforms import registry


class DabenchPlatformsSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for record in registry().values():
            url = f"file://{record.conf}"
            if record.conf and all(e.path != url for e in search_path.get_path()):
                search_path.append(provider=f"dabench-platform-{record.name}", path=url)
