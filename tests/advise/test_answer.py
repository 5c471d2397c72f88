"""An advice end to end on a small search: rows are labelled PREDICTED, the reproduce command
composes to the same prediction, a platform where nothing fits says why; MLflow parent + one
child per platform, and the report's advice page (slow)."""

import json
import shlex

import pytest

from dabench.advise.answer import CSV_COLUMNS, rows, search_rows, table, write_csv
from dabench.advise.run import Request, advise


@pytest.fixture(scope="module")
def small():
    request = Request(
        model="gpt2_small",
        tokens=1e9,
        platforms=["rdu", "ipu"],
        max_chips=2,
        trials=12,
        objectives=["time", "energy"],
        price_per_chip_hour=2.0,
    )
    advice = advise(request)
    return advice, rows(advice)


def test_rows_are_predicted_and_complete(small, tmp_path):
    advice, ranked = small
    assert [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1))
    assert {r["platform"] for r in ranked} == {"rdu", "ipu"}
    for r in ranked:
        assert r["label"] == "PREDICTED" and r["out_of_sample_error"]
        if r["status"] == "ok":
            assert r["time_to_train_s"] > 0 and r["command"].startswith("python -m dabench ")
            assert "hardware.mode=measure" in r["measure_command"]
            assert r["band"] and r["reach"] and r["diagnosis"]
            assert r["cost"] is not None  # price given
            if r["platform"] == "rdu":
                assert r["energy_kwh"] is None and "unsourced" in r["power_source"]
        else:
            assert r["reason"]
    text = table(advice, ranked)
    assert "PREDICTED" in text and "Pareto" in text
    write_csv(ranked, tmp_path / "a.csv")
    assert (tmp_path / "a.csv").read_text().splitlines()[0].split(",") == CSV_COLUMNS
    assert any(s["status"] != "ok" and s["reason"] for s in search_rows(advice)) or all(
        s["status"] == "ok" for s in search_rows(advice)
    )


def test_command_reproduces_the_prediction(small):
    from dabench.api import predict

    _, ranked = small
    r = next(r for r in ranked if r["status"] == "ok")
    overrides = shlex.split(r["command"])[3:]
    result = predict(overrides)
    assert result.status.value == "ok"
    assert result.metrics["throughput.tokens_per_s"] == pytest.approx(r["tokens_per_s"], rel=1e-9)


@pytest.mark.slow
def test_recorded_parent_children_and_report_page(small, tmp_path):
    from dabench.advise.record import record
    from dabench.report.advice import write_advice_pages
    from dabench.report.frame import client_for, load_frame

    advice, ranked = small
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    parent = record(advice, ranked, experiment="advise-test", uri=uri)
    client = client_for(uri)
    frame, _ = load_frame(selection=parent, client=client)
    assert len(frame) == len(ranked)  # one child per platform, not one per deployment
    assert set(frame["tags.dabench.advise"]) == {"best"}
    artifacts = {a.path for a in client.list_artifacts(parent, "advice")}
    assert {"advice/advice.json", "advice/advice.csv", "advice/search.csv"} <= artifacts
    pages = write_advice_pages(frame, tmp_path / "report", client)
    assert len(pages) == 1
    page = pages[0].read_text()
    assert "PREDICTED" in page and "band" in page
    path = client.download_artifacts(parent, "advice/advice.json", str(tmp_path / "dl"))
    data = json.loads(open(path).read())
    assert data["label"] == "PREDICTED" and len(data["search"]) == advice.evaluations
