"""The platform registry (dabench/core/platforms.py) and the platform folders (dabench/platforms/):
every record's parts exist and agree with conf/, sweeps/ and ingest, and no module outside a
platform folder compares an arch name or keys a table by one."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import pytest
import yaml

from dabench.config.compose import compose
from dabench.config.paths import CONF_DIR, SWEEPS_DIR
from dabench.core import platforms as P
from dabench.core.status import ConfigError

REPO = Path(__file__).resolve().parents[2]
NAMES = P.names()
#: an arch name compared in code: ``arch == "cpu"``, ``hardware.get("arch") != 'ipu'``, ``arch in ("cpu", ...)``
COMPARED = re.compile(r"""(arch|platform)["')\]]*\s*(==|!=|in\s*[(\[{])\s*["'](%s)["']""" % "|".join(NAMES))


@pytest.mark.parametrize("name", NAMES)
def test_every_part_of_a_record_exists(name):
    record = P.registry()[name]
    assert record.name == name
    assert list(inspect.signature(record.predict.target()).parameters) == ["rc", "graph", "ceilings"]
    for backend, get in record.backends.items():
        assert get().name == backend
    assert set(record.host_backends) <= set(record.backends)
    assert dataclasses.is_dataclass(record.options())
    if record.device_name:
        assert callable(record.device_name)
    if record.space:
        assert list(inspect.signature(record.space.target()).parameters) == ["space", "args", "config", "chips"]
    if record.sweep:
        assert (SWEEPS_DIR / f"{record.sweep}.yaml").is_file()
    if record.ingest:
        parser = record.ingest()
        assert record.formats and callable(parser.detect) and callable(parser.parse) and parser.LOOKS_FOR
    assert bool(record.formats) == bool(record.ingest)
    preset = yaml.safe_load((CONF_DIR / "hardware" / f"{name}.yaml").read_text())
    assert preset["arch"] == name and preset["backend"] in record.backends
    assert record.power.sourced or record.power.kind == "unsourced"
    assert all(low < high for low, high in record.fit_bounds.values())


def test_every_hardware_config_and_ingest_format_has_its_platform():
    for path in (CONF_DIR / "hardware").glob("*.yaml"):
        preset = compose([f"hardware={path.stem}"])["hardware"]
        assert preset["backend"] in P.platform(preset["arch"]).backends, path.name
    formats = [f for p in P.registry().values() for f in p.formats]
    assert len(formats) == len(set(formats)) and all(P.arch_of_format(f) for f in formats)


def test_unknown_names_ask_nothing_and_refuse_by_field():
    assert P.platform("tpu").predict is None and not P.on_host_cpu("xla")
    with pytest.raises(KeyError, match="xla.*cpu, cstorch"):
        P.backend_class("xla")
    with pytest.raises(ConfigError, match="platforms.*tpu.*cpu, cuda"):
        P.known("tpu", "platforms")
    assert (
        "cpu" not in P.accelerators()
        and set(P.accelerators()) < set(P.presets())
        and set(P.names()) - {"cpu"} < set(P.accelerators())
    )


def _shared_modules():
    for path in sorted((REPO / "dabench").rglob("*.py")) + sorted((REPO / "hydra_plugins").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if not rel.startswith("dabench/platforms/"):
            yield rel, path.read_text()


def test_no_module_compares_an_arch_name_but_the_platform_folders():
    found = [
        f"{rel}:{number}: {line.strip()}"
        for rel, text in _shared_modules()
        for number, line in enumerate(text.splitlines(), 1)
        if COMPARED.search(line)
    ]
    assert not found, "ask dabench.core.platforms instead:\n" + "\n".join(found)


def keyed_by_a_platform(source: str) -> list[int]:
    """Lines of dict literals (``{"ipu": ...}``, ``dict(ipu=...)``) with a platform name as a key."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys = [k.arg for k in node.keywords]
        else:
            continue
        if set(keys) & set(NAMES):
            lines.append(node.lineno)
    return lines


def test_no_table_outside_a_platform_folder_is_keyed_by_a_platform_name():
    found = [f"{rel}:{line}" for rel, text in _shared_modules() for line in keyed_by_a_platform(text)]
    assert not found, "declare it on the Platform record in its folder instead:\n" + "\n".join(found)


def test_the_patterns_find_a_comparison_and_a_table():
    assert COMPARED.search('    if rc.hardware.arch == "cpu":') and COMPARED.search("hardware.get('arch') != 'ipu'")
    assert COMPARED.search('if arch in ("cpu", "cuda"):') and not COMPARED.search('if device.type == "cuda":')
    assert keyed_by_a_platform('POWER = {"ipu": 1.0}\nx = {"batch": 1}\ny = dict(rdu=2)') == [1, 3]
