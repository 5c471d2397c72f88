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
