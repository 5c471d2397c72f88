"""Pure math of dabench advise: time, bands, energy, cost, Pareto set, power sources."""

import math

import pytest

from dabench.advise import energy as E
from dabench.core.platforms import platform, preset, presets, registry


def test_time_to_train():
    assert E.time_to_train_s(1e9, 1e5) == pytest.approx(1e4)
    assert E.time_to_train_s(1e9, 0) == math.inf
    assert E.time_to_train_s(1e9, float("nan")) == math.inf


def test_band_ratios_and_time_band():
    assert E.band_ratios(100.0, None) is None
    assert E.band_ratios(100.0, (None, 120.0)) is None
    assert E.band_ratios(100.0, (120.0, 80.0)) is None  # hi below lo: not a band
    lo, hi = E.band_ratios(100.0, (80.0, 125.0))
    assert (lo, hi) == pytest.approx((0.8, 1.25))
    shortest, longest = E.time_band(1e9, 1e5, (lo, hi))
    assert shortest == pytest.approx(1e4 / 1.25) and longest == pytest.approx(1e4 / 0.8)
    assert E.time_band(1e9, 1e5, None) is None


def test_energy_and_cost():
    assert E.energy_j(700.0, 8, 3600.0) == pytest.approx(700 * 8 * 3600)
    assert E.kwh(E.energy_j(700.0, 8, 3600.0)) == pytest.approx(5.6)
    assert E.energy_j(None, 8, 3600.0) is None
    assert E.cost(7200.0, 4, per_chip_hour=2.0) == pytest.approx(16.0)
    assert E.cost(3600.0, 9, per_system_hour=10.0, chips_per_system=8) == pytest.approx(20.0)  # 2 systems
    assert E.cost(3600.0, 4) is None
    assert E.scale_band(10.0, (0.8, 1.25)) == pytest.approx((8.0, 12.5))
    assert E.scale_band(None, (0.8, 1.25)) is None


def test_pareto_front():
    points = [(1.0, 10.0), (2.0, 5.0), (3.0, 6.0), (4.0, 1.0), (2.0, 5.0), (math.inf, 0.5), (0.5, 20.0)]
    assert sorted(E.pareto_front(points)) == [0, 1, 3, 6]
    assert E.pareto_front([]) == []


def test_power_figures_are_sourced_or_say_unsourced():
    for name, figure in ((name, preset(name).power) for name in presets()):
        if figure.sourced:
            assert figure.document and figure.locator and figure.kind in ("tdp", "max", "average"), name
            assert figure.watts_per_chip > 0
        else:
            assert figure.kind == "unsourced" and figure.label().startswith("unsourced")
    assert platform("nonexistent").power.watts_per_chip is None


def test_every_generation_preset_has_its_own_power_figure():
    """A generation preset advise compares is priced at its own board's figure, never its family's."""
    for record in registry().values():
        for name, figure in record.presets.items():
            assert figure == preset(name).power and figure.covers != record.power.covers, name


def test_human_time():
    assert E.human_time(90) == "1.5 min"
    assert E.human_time(3 * 86400) == "3 d"
    assert E.human_time(None) == "-"
