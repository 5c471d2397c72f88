"""The platform registry (dabench/core/platforms.py): every record's parts exist and agree with
conf/, sweeps/ and ingest, and no other module compares an arch name itself."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

from dabench.config.compose import compose
from dabench.config.paths import CONF_DIR, SWEEPS_DIR
from dabench.core import platforms as P
from dabench.core.status import ConfigError
from dabench.ingest.parse import FORMATS

REPO = Path(__file__).resolve().parents[2]
#: an arch name compared in code: ``arch == "cpu"``, ``hardware.get("arch") != 'ipu'``, ``arch in ("cpu", ...)``
COMPARED = re.compile(r"""(arch|platform)["')\]]*\s*(==|!=|in\s*[(\[{])\s*["'](%s)["']""" % "|".join(P.PLATFORMS))
#: folders not yet moved onto the registry (the fitting package's own per-platform refits)
NOT_YET: tuple[str, ...] = ()


@pytest.mark.parametrize("name", list(P.PLATFORMS))
def test_every_part_of_a_record_exists(name):
    record = P.PLATFORMS[name]
    assert record.name == name
    assert list(inspect.signature(P.load(record.predictor)).parameters) == ["rc", "graph", "ceilings"]
    for backend, path in record.backends.items():
        assert P.load(path).name == backend
    assert set(record.host_backends) <= set(record.backends)
    if record.device_name:
        assert callable(P.load(record.device_name))
    if record.space:
        assert list(inspect.signature(P.load(record.space)).parameters) == ["space", "args", "config", "chips"]
    if record.sweep:
        assert (SWEEPS_DIR / f"{record.sweep}.yaml").is_file()
    preset = yaml.safe_load((CONF_DIR / "hardware" / f"{name}.yaml").read_text())
    assert preset["arch"] == name and preset["backend"] in record.backends


def test_every_hardware_config_and_ingest_format_has_its_platform():
    for path in (CONF_DIR / "hardware").glob("*.yaml"):
        preset = compose([f"hardware={path.stem}"])["hardware"]
        assert P.backend_path(preset["backend"]) in P.platform(preset["arch"]).backends.values(), path.name
    assert {fmt: P.arch_of_format(fmt) is not None for fmt in FORMATS} == dict.fromkeys(FORMATS, True)
    assert sorted(f for p in P.PLATFORMS.values() for f in p.formats) == sorted(FORMATS)


def test_unknown_names_ask_nothing_and_refuse_by_field():
    assert P.platform("tpu").predictor == "" and P.backend_path("xla") is None and not P.on_host_cpu("xla")
    with pytest.raises(ConfigError, match="platforms.*tpu.*cpu, cuda"):
        P.known("tpu", "platforms")
    assert "cpu" not in P.accelerators() and set(P.accelerators()) < set(P.names())


def test_no_module_compares_an_arch_name_but_the_registry():
    found = []
    for path in sorted((REPO / "dabench").rglob("*.py")) + sorted((REPO / "hydra_plugins").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "dabench/core/platforms.py" or rel.startswith(NOT_YET):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if COMPARED.search(line):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert not found, "ask dabench.core.platforms instead:\n" + "\n".join(found)


def test_the_pattern_finds_a_comparison():
    assert COMPARED.search('    if rc.hardware.arch == "cpu":') and COMPARED.search("hardware.get('arch') != 'ipu'")
    assert COMPARED.search('if arch in ("cpu", "cuda"):') and not COMPARED.search('if device.type == "cuda":')
