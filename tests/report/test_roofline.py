"""Roofline points lie under their roof on every platform, predicted and measured.

The roof of a point is min(peak FLOP/s at the run's precision, intensity * bandwidth) with the
run's own ceilings; a point above it is a defect in the point's work or time, not in the drawing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from dabench.config.build import build_run_config
from dabench.metrics.roofline import attainable_flops
from dabench.metrics.summary import roofline_points
from dabench.pipeline.execute import execute
from dabench.report.roofline_plot import roofline_svg
from tests.conftest import composed

TOLERANCE = 1e-6

PLATFORMS = {
    "cpu-predict": ["hardware=cpu", "hardware.mode=predict"],
    "cuda-predict": ["hardware=cuda", "hardware.mode=predict"],
    "cuda-predict-bf16": ["hardware=cuda", "hardware.mode=predict", "precision=bf16"],
    "wse2": ["hardware=wse2", "hardware.mode=predict"],
    "rdu": ["hardware=rdu", "hardware.mode=predict"],
    "rdu-mixed": ["hardware=rdu", "hardware.mode=predict", "precision=mixed"],
    "ipu-pp": ["hardware=ipu", "hardware.mode=predict", "parallel=pp", "run.grad_accum=4"],
    "cpu-measured": ["hardware=cpu", "hardware.mode=measure", "run.warmup_steps=1", "run.timed_steps=2"],
    "cpu-validate": ["hardware=cpu", "hardware.mode=validate", "run.warmup_steps=1", "run.timed_steps=2"],
}
SVG = "{http://www.w3.org/2000/svg}"


def _pixel_centre(element) -> tuple[float, float]:
    if element.tag == SVG + "circle":
        return float(element.get("cx")), float(element.get("cy"))
    corners = [tuple(map(float, c.split(","))) for c in element.get("points").split()]  # diamond, star: symmetric
    return sum(x for x, _ in corners) / len(corners), sum(y for _, y in corners) / len(corners)


def check_drawing(
    svg: str,
    points,
    predicted_points,
    predicted: bool,
    peak: float,
    bandwidth: float,
    band: float = 0.0,
    from_cache: frozenset[str] = frozenset(),
) -> None:
    """The drawn figure: every timed point is a marker below the drawn roof (pixel rows grow
    downwards), measured markers filled, predicted ones hollow, axes labelled with units.
    ``from_cache``: measured classes the run named above the memory roof (only the peak bounds them)."""
    root = ET.fromstring(svg)
    roof = [tuple(map(float, c.split(","))) for c in root.find(f".//{SVG}polyline[@data-roof]").get("points").split()]
    markers = [e for e in root.iter() if e.get("data-point")]
    expected = {(p.name, "predicted" if predicted else "measured") for p in points if p.achieved and p.intensity > 0}
    expected |= {(p.name, "predicted") for p in predicted_points or [] if p.achieved and p.intensity > 0}
    assert {(e.get("data-point"), e.get("data-kind")) for e in markers if e.get("data-kind") != "on-roof"} == expected
    for element in markers:
        intensity, flops = float(element.get("data-intensity")), float(element.get("data-flops"))
        cached = element.get("data-kind") == "measured" and element.get("data-point") in from_cache
        assert flops <= (peak if cached else min(peak, intensity * bandwidth)) * (1 + max(TOLERANCE, band))
        if element.get("data-kind") == "on-roof" or cached:
            continue
        x, y = _pixel_centre(element)
        (x0, y0), (x1, y1) = next((a, b) for a, b in zip(roof, roof[1:], strict=False) if a[0] <= x <= b[0])
        roof_row = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        assert y >= roof_row - 0.5, f"{element.get('data-point')}: drawn at row {y:.1f} above the roof {roof_row:.1f}"
        hollow = element.get("fill") == "white"
        assert hollow is (element.get("data-kind") == "predicted"), element.get("data-point")
    text = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    assert "FLOP/byte" in text and "FLOP/s" in text and "B/s" in text and "ridge" in text


@pytest.mark.parametrize("overrides", PLATFORMS.values(), ids=PLATFORMS.keys())
def test_every_point_is_under_its_roof(overrides):
    rc = build_run_config(composed(overrides))
    result = execute(rc)
    assert result.status.value == "ok", result.reason
    profile = result.profile or result.predicted
    expected_mode = "predict" if "hardware.mode=predict" in overrides else "measure"
    assert profile.mode == expected_mode
    peak, bandwidth = result.ceilings.peak_flops, result.ceilings.bandwidth_Bps
    points = roofline_points(result.graph, profile, result.ceilings, rc.data_copies)
    timed = [p for p in points if p.achieved is not None]
    assert any(p.name == "step" for p in timed)
    # a measured roof is the fastest rate the machine showed, with a band as wide as its repeats
    # spread (docs/metrics.md, "Noisy machines"): a point may sit inside the band above it, not beyond
    band = float(result.metrics.get("ceilings.band_width", 0.0)) if result.profile is not None else 0.0
    # a measured class whose working set stays in cache may beat the DRAM roof; the run names it
    # (dabench.roofline_note, pipeline/execute.measured_points_bound) and only the peak bounds it
    note = result.notes.get("dabench.roofline_note", "")
    from_cache = frozenset(n.strip() for n in note.split(": ", 1)[1].split(",")) if ": " in note else frozenset()
    for p in timed:
        roof = peak if result.profile is not None and p.name in from_cache else min(peak, p.intensity * bandwidth)
        assert p.attainable == pytest.approx(attainable_flops(p.intensity, peak, bandwidth))
        assert p.achieved <= roof * (1 + max(TOLERANCE, band)), (
            f"{p.name}: {p.achieved:.4g} FLOP/s above its roof {roof:.4g} (band {band:.1%})"
        )
    predicted_points = None
    if result.profile is not None and result.predicted is not None:  # validate: the prediction beside it
        predicted_points = roofline_points(result.graph, result.predicted, result.ceilings, rc.data_copies)
    svg = roofline_svg(
        points, peak, bandwidth, "t", profile.mode == "predict", result.ceilings.memory_level, predicted_points
    )
    check_drawing(svg, points, predicted_points, profile.mode == "predict", peak, bandwidth, band, from_cache)
    if rc.hardware.name in ("cpu", "cuda"):  # per-class points: measured by torch.profiler or predicted per class
        assert {p.name for p in timed} >= {"matmul", "attention", "loss", "optimizer", "step"}


def test_log_softmax_time_is_the_loss_class():
    """The cross-entropy's log-softmax (forward and backward) is timed as loss, whose FLOPs the op
    graph counts; under attention it left the loss point with too little time, above its roof."""
    pytest.importorskip("torch")
    from dabench.backends.torch_train import op_class_of

    for name in (
        "aten::_log_softmax",
        "aten::log_softmax",
        "aten::_log_softmax_backward_data",
        "aten::nll_loss_forward",
        "aten::nll_loss_backward",
        "aten::cross_entropy_loss",
    ):
        assert op_class_of(name) == "loss", name
    for name in ("aten::_softmax", "aten::_scaled_dot_product_flash_attention_for_cpu"):
        assert op_class_of(name) == "attention", name
