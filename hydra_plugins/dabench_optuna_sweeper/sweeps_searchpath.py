"""Makes the top-level ``sweeps/`` folder the Hydra config group ``sweeps`` (``+sweeps=ipu_deploy``
from any directory): a config source (``dabench-sweeps://<folder>``) showing only that group, added
for every ``<dir>/conf`` search-path entry whose ``<dir>`` holds ``sweeps/``, after the launch
directory's own ``sweeps/``. dabench/config/paths.py (``sweep_folders``) lists the same folders.
"""

import os
from pathlib import Path
from typing import List, Optional

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from dabench.config.files import read_sweep
from dabench.core.paths import launch_dir
from dabench.core.readers import DamagedFile

GROUP = "sweeps"
SCHEME = "dabench-sweeps"


class SweepsConfigSource(ConfigSource):
    @staticmethod
    def scheme() -> str:
        return SCHEME

    def _file(self, config_path: str) -> Optional[str]:
        group, _, name = self._normalize_file_name(config_path).partition("/")
        if group != GROUP or not name or "/" in name:
            return None
        return os.path.join(self.path, name)

    def load_config(self, config_path: str) -> ConfigResult:
        path = self._file(config_path)
        if path is None or not os.path.isfile(path):
            raise ConfigLoadError(f"Config not found : {config_path} (in {self.path})")

        try:
            text, document = read_sweep(path)  # a regular file, bounded, parsed once and checked
        except DamagedFile as error:
            raise ConfigLoadError(str(error)) from None
        return ConfigResult(
            config=OmegaConf.create(document),
            path=f"{SCHEME}://{self.path}",
            provider=self.provider,
            header=ConfigSource._get_header_dict(text[:512]),
        )

    def available(self) -> bool:
        return os.path.isdir(self.path)

    def is_group(self, config_path: str) -> bool:
        return config_path in ("", GROUP)

    def is_config(self, config_path: str) -> bool:
        path = self._file(config_path)
        return path is not None and os.path.isfile(path)

    def list(self, config_path: str, results_filter: Optional[ObjectType]) -> List[str]:
        files: List[str] = []
        if config_path == "":
            self._list_add_result(files=files, file_path=GROUP, file_name=GROUP, results_filter=results_filter)
        elif config_path == GROUP:
            for name in os.listdir(self.path):
                if name.endswith(".yaml"):
                    self._list_add_result(
                        files=files, file_path=f"{GROUP}/{name}", file_name=name, results_filter=results_filter
                    )
        return sorted(set(files))


class DabenchSweepsSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        paths = [(element.path or "").removeprefix("file://") for element in search_path.get_path()]
        confs = [Path(path).resolve() for path in paths if path and "://" not in path]  # local folders only
        folders = [conf.parent / GROUP for conf in confs if conf.name == "conf" and (conf.parent / GROUP).is_dir()]
        if not folders:
            return  # not dabench's layout: another Hydra application
        launch = (Path(launch_dir()) / GROUP).resolve()
        if launch.is_dir():  # the user's own sweeps, before the shipped ones (config/paths.py: sweep_folders)
            folders.insert(0, launch)
        for folder in folders:
            url = f"{SCHEME}://{folder}"
            if all(e.path != url for e in search_path.get_path()):
                search_path.append(provider="dabench-sweeps", path=url)
