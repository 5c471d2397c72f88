"""The report's pure parts on hand-made frames: the normalized columns, each figure, notes for
absent data, the HTML's self-containment, and the comparison table."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from dabench.cli.compare import comparison, render
from dabench.report import figures
from dabench.report.frame import normalize
from dabench.report.html import write_report


def run(
    run_id: str,
    platform: str,
    mode: str = "predict",
    status: str = "ok",
    layers: int = 2,
    hidden: int = 768,
    batch: int = 8,
    precision: str = "mixed",
    strategy: str = "none",
    chips: int = 1,
    throughput: float = 100.0,
    **extra,
) -> dict:
    """One row as frame.runs_to_frame builds it from an MLflow run written by dabench."""
    row = {
        "run_id": run_id,
        "experiment": "dabench",
        "run_name": f"{platform} L{layers}",
        "mlflow_status": "FINISHED",
        "tags.dabench.hardware": platform,
        "tags.dabench.mode": mode,
        "tags.dabench.status": status,
        "params.model.n_layers": str(layers),
        "params.model.hidden_size": str(hidden),
        "params.run.batch_size": str(batch),
        "params.precision.name": precision,
        "params.parallel.strategy": strategy,
        "metrics.chips": float(chips),
        "metrics.throughput.samples_per_s": throughput,
        "metrics.tier1.load_imbalance": 0.9,
        "metrics.tier1.allocation_ratio": 0.6,
        "metrics.roofline.step.intensity": 100.0,
        "metrics.perf.achieved_tflops": 10.0,
        "metrics.perf.peak_tflops": 100.0,
        "metrics.roofline.ridge_intensity": 50.0,
        "tags.dabench.diagnosis": "memory-bandwidth-bound",
        "tags.dabench.diagnosis_reason": "I < ridge",
    }
    if status != "ok":
        row["tags.dabench.reason"] = f"{platform} capacity exceeded"
        row["mlflow_status"] = "FAILED"
    row.update(extra)
    return row


def full_frame() -> pd.DataFrame:
    rows = [
        run(f"{i:032x}", p, layers=l, hidden=h, throughput=1000.0 / l)
        for i, (p, l, h) in enumerate((p, l, h) for p in ("wse2", "rdu") for l in (2, 4) for h in (384, 768))
    ]
    rows += [
        run("a" * 32, "cpu", mode="measure", layers=2, hidden=128, batch=b, precision=pr, throughput=50.0 * b)
        for b in (2,)
        for pr in ("fp32",)
    ]
    rows += [
        run(f"b{i:031x}", "cpu", mode="measure", batch=b, precision=pr, throughput=10.0 * b)
        for i, (b, pr) in enumerate(((2, "fp32"), (4, "fp32"), (4, "bf16")))
    ]
    rows += [
        run(
            f"c{i:031x}",
            "cuda",
            strategy=s,
            chips=n,
            throughput=100.0 * n * 0.9,
            **{"metrics.tier2.scaling_efficiency": 0.9 if n > 1 else 1.0, "metrics.tier2.comm_fraction": 0.1},
        )
        for i, (s, n) in enumerate((s, n) for s in ("dp", "tp", "pp") for n in (1, 2, 4))
    ]
    rows.append(run("d" * 32, "wse2", status="capacity", layers=200))
    return normalize(pd.DataFrame(rows))


def old_frame() -> pd.DataFrame:
    """Runs as an older dabench logged them: no dabench.* tags, few params and metrics."""
    return normalize(
        pd.DataFrame(
            [
                {
                    "run_id": "e" * 32,
                    "run_name": "old",
                    "mlflow_status": "FINISHED",
                    "params.hardware.name": "cpu",
                    "params.model.n_layers": "2",
                    "metrics.throughput.samples_per_s": 5.0,
                },
                {"run_id": "f" * 32, "run_name": "old failed", "mlflow_status": "FAILED"},
            ]
        )
    )


def test_normalized_columns_from_new_and_old_runs():
    frame = full_frame()
    row = frame.set_index("run_id").loc["0" * 32]
    assert (row["platform"], row["mode"], row["layers"], row["hidden"], row["chips"]) == ("wse2", "predict", 2, 384, 1)
    assert row["achieved_flops"] == 10e12 and row["bandwidth"] == pytest.approx(100e12 / 50.0)
    old = old_frame().set_index("run_id")
    assert old.loc["e" * 32, ["platform", "mode", "status"]].tolist() == ["cpu", "unknown", "ok"]
    assert old.loc["f" * 32, ["platform", "status"]].tolist() == ["unknown", "failed"]
    assert pd.isna(old.loc["e" * 32, "li"]) and old.loc["e" * 32, "throughput"] == 5.0


@pytest.mark.parametrize("spec", figures.FIGURES, ids=[s.key for s in figures.FIGURES])
def test_every_figure_draws_and_says_when_its_data_is_absent(spec):
    fig = spec.draw(full_frame())
    assert fig.axes and any(ax.has_data() for ax in fig.axes)
    with pytest.raises(figures.NoData, match=r"^no .* in this selection$"):
        spec.draw(old_frame().iloc[0:0])
    if spec.key != "layers":  # the old run has layers and throughput, nothing else
        with pytest.raises(figures.NoData):
            spec.draw(old_frame())


def test_roofline_marks_predicted_and_measured_apart():
    fig = figures.roofline(full_frame())
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("PREDICTED" in label for label in labels) and any("measure" in label for label in labels)
    assert "FLOP/byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel()


def test_html_is_self_contained_with_notes(tmp_path):
    frame = full_frame()
    frame = frame[frame["strategy"] == "none"]  # no scaling runs -> a note in place of that figure
    report = write_report(frame, tmp_path, "test selection", "sqlite:///x.db")
    html = report.html.read_text()
    assert set(report.notes) == {"scaling"}
    assert "no ok runs with a parallel strategy" in html
    assert html.count('src="data:image/svg+xml;base64,') == len(figures.FIGURES) - 1
    assert not re.search(r'src="(?!data:)', html) and "<script" not in html  # nothing loaded from outside
    links = re.findall(r'href="([^"#][^"]*)"', html)  # run names link to their MLflow pages (docs/ui.md)
    assert links and all(re.fullmatch(r"http://127\.0\.0\.1:5000/#/runs/[0-9a-f]{32}", link) for link in links)
    shown = re.sub(r"<[^>]+>", "", html)
    assert "d" * 32 not in shown and "wse2 capacity exceeded" in shown  # failures table: name and reason
    assert len(report.figures) == 2 * (len(figures.FIGURES) - 1)
    assert pd.read_csv(report.csv)["run_id"].tolist() == frame["run_id"].tolist()


def test_comparison_shows_metrics_and_only_differing_params():
    frame = full_frame()
    two = frame[frame["run_id"].isin(["b" + "0" * 31, "b" + "0" * 30 + "2"])]
    table = comparison(two)
    assert len(table.columns) == 2
    assert "throughput.samples_per_s" in table.index and "tier1.load_imbalance" in table.index
    params = [i for i in table.index if i.startswith("params.")]
    assert set(params) == {"params.run.batch_size", "params.precision.name"}
    assert len(comparison(two, all_params=True).index) > len(table.index)
    assert "throughput.samples_per_s" in render(table)
