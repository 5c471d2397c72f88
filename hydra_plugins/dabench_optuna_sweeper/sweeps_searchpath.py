"""Makes the repository's top-level ``sweeps/`` folder a Hydra config group, so
``python -m dabench +sweeps=ipu_deploy -m`` works from any directory.

For every config source ``<dir>/conf`` (a plain path or ``file://`` URL) whose ``<dir>`` also holds a ``sweeps/`` folder
(dabench's layout), ``file://<dir>`` is appended to the search path; its ``sweeps/`` subfolder is
then the ``sweeps`` group. Other Hydra applications are left untouched.
"""

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class DabenchSweepsSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for element in list(search_path.get_path()):
            path = element.path or ""
            if path.startswith("file://"):
                path = path[len("file://"):]
            elif "://" in path or not path:
                continue
            conf = Path(path).resolve()
            if conf.name == "conf" and (conf.parent / "sweeps").is_dir():
                root = f"file://{conf.parent}"
                if all(e.path != root for e in search_path.get_path()):
                    search_path.append(provider="dabench-sweeps", path=root)
