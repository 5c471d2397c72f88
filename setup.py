"""Packaging glue that pyproject.toml cannot say: a built wheel carries the repository's
top-level config folders as package data.

conf/ (the Hydra config groups) and sweeps/ (the ``+sweeps=NAME`` group) stay at the top of the
repository, where they are edited; ``build_py`` copies them into the built package as
``dabench/_data/conf`` and ``dabench/_data/sweeps``, where dabench/config/paths.py looks first.
An editable install (``pip install -e .``) copies nothing: its ``dabench`` keeps reading the
repository's folders. The sdist carries both folders too (MANIFEST.in), so a wheel built from it
is the same.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: repository folder -> its place inside the built ``dabench`` package
DATA_FOLDERS = {"conf": "_data/conf", "sweeps": "_data/sweeps"}
SKIP = ("__pycache__", ".pytest_cache")


def _data_files() -> list[tuple[Path, str]]:
    """(source file, path relative to the built dabench package) for every file to bundle."""
    files: list[tuple[Path, str]] = []
    for folder, target in DATA_FOLDERS.items():
        source = ROOT / folder
        if not (source / ("config.yaml" if folder == "conf" else "")).exists():
            raise SystemExit(
                f"setup.py: {source} is missing; a wheel without it cannot compose a run "
                "(build from a checkout or from the sdist)"
            )
        for dirpath, dirnames, filenames in os.walk(source):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP)
            for name in sorted(filenames):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = Path(dirpath) / name
                files.append((path, f"{target}/{path.relative_to(source).as_posix()}"))
    return files


class BuildPyWithConfigs(build_py):
    """``build_py`` that also copies conf/ and sweeps/ to ``<build_lib>/dabench/_data/``."""

    def _bundles(self) -> bool:
        return not getattr(self, "editable_mode", False)  # editable: the repository's folders are used in place

    def run(self) -> None:
        super().run()
        if not self._bundles():
            return
        package = Path(self.build_lib) / "dabench"
        bundled = package / "_data"
        if bundled.exists():
            shutil.rmtree(bundled)  # no stale config left over from an earlier build
        for source, relative in _data_files():
            target = package / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(source), str(target), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if self._bundles():
            package = Path(self.build_lib) / "dabench"
            outputs += [str(package / relative) for _, relative in _data_files()]
        return outputs


setup(cmdclass={"build_py": BuildPyWithConfigs})
