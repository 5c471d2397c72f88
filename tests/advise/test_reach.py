"""The advice's reach line: a deployment outside the calibration points says how, in plain units."""

from dabench.advise.reach import Calibration, Coverage, outside


def _cal() -> Calibration:
    coverage = Coverage(params=(1.65e9, 1.2e12), chips=(1, 8), precisions=("mixed",), points=6)
    return Calibration("cuda", "published", "0" * 12, coverage=coverage)


def test_a_smaller_and_a_larger_model_are_named_in_the_same_units():
    assert outside(_cal(), 1.55e9, 8, "mixed") == ["model ~1.55B params < smallest calibrated ~1.65B"]
    assert outside(_cal(), 124e6, 8, "mixed") == ["model ~124M params < smallest calibrated ~1.65B"]
    assert outside(_cal(), 1.6e12, 16, "bf16") == [
        "model ~1.6T params > largest calibrated ~1.2T",
        "16 chips > 8 calibrated",
        "precision bf16 not calibrated (mixed)",
    ]


def test_inside_the_points_is_no_reason():
    assert outside(_cal(), 13e9, 4, "mixed") == []


def test_a_preset_is_calibrated_by_its_own_generations_points_only():
    """A generation preset's column counts its family's points of its own chip generation: an A100
    point is not an H200's calibration, and a chip no point ran on is uncalibrated."""
    from dabench.advise.reach import calibration
    from dabench.fit.points import load_points

    def ids(name):
        cal = calibration(name)
        return {i for i, _ in cal.out_of_sample + cal.in_sample + cal.excluded}

    points = {p.id: p for p in load_points()}
    ampere = {i for i, p in points.items() if p.platform == "cuda" and "hardware=cuda_a100" in p.overrides}
    assert ampere and ids("cuda_a100") and ids("cuda_a100") <= ampere
    assert not ids("cuda") & ampere and ids("cuda") == ids("cuda_h100")  # both Hopper
    assert not ids("mi300x") and calibration("mi300x").coverage.points == 0
    assert ids("b200") == {i for i, p in points.items() if "hardware=b200" in p.overrides}
    assert not ids("wse3") and ids("wse2") and not ids("gaudi3") and ids("gaudi2")
