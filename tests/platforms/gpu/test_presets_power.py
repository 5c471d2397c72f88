"""Every GPU generation preset is advised on by name, with its own board's sourced power."""

import pytest

from dabench.core.platforms import preset, presets
from tests.conftest import CONF, composed

WATTS = {"cuda": 700.0, "cuda_h100": 700.0, "cuda_a100": 400.0, "b200": 1000.0, "mi300x": 750.0, "mi325x": 1000.0}


def test_every_gpu_preset_file_is_named_with_its_power():
    stems = [p.stem for p in (CONF / "hardware").glob("*.yaml")]
    gpu_files = {s for s in stems if composed([f"hardware={s}"])["hardware"]["arch"] == "cuda"}
    assert gpu_files == set(WATTS) and gpu_files <= set(presets())


@pytest.mark.parametrize("name, watts", sorted(WATTS.items()))
def test_each_gpu_preset_has_its_own_sourced_power(name, watts):
    power = preset(name).power
    assert preset(name).name == "cuda" and power.sourced and power.watts_per_chip == watts
    assert power.document and power.locator
