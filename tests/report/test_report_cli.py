"""`python -m dabench report` and `python -m dabench compare` on a real store (tests/report/conftest.py),
and the report opened in headless Chromium."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM_FLAGS, need_chromium, run_dabench

pytestmark = pytest.mark.slow

FIGURES = ("layers", "allocation", "roofline", "scaling", "batch", "precision", "diagnosis")


def cli(command: str, *args: str, folder: Path, code: int = 0) -> subprocess.CompletedProcess:
    return run_dabench(command, *args, cwd=folder, code=code)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def full_report(report_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("full_report")
    done = cli("report", "--out", str(out), folder=report_store.folder)
    return out, done.stdout


def test_report_of_every_run(report_store, full_report):
    out, stdout = full_report
    html = (out / "report.html").read_text()
    for key in FIGURES:
        assert (out / "figures" / f"{key}.png").stat().st_size > 1000, key
        assert (out / "figures" / f"{key}.svg").read_text().lstrip().startswith("<?xml"), key
    # self-contained: every figure is an embedded SVG, nothing is fetched, no script
    assert html.count('<img src="data:image/svg+xml;base64,') == len(FIGURES)
    # (links to the runs' MLflow pages are the one outbound href: docs/ui.md)
    assert not re.search(r'src="(?!data:)', html) and "<script" not in html
    assert all(
        re.match(r"http://127\.0\.0\.1:\d+/#/experiments/\d+/runs/[0-9a-f]{32}", link)
        for link in re.findall(r'href="([^"#][^"]*)"', html)
    )
    rows = read_csv(out / "runs.csv")
    platforms = {r["platform"] for r in rows}
    assert {"wse2", "ipu", "rdu", "cuda", "cpu"} <= platforms
    assert {r["mode"] for r in rows} >= {"predict", "measure", "unknown"}
    assert not any(r["is_parent"] == "True" for r in rows)
    # failures are a table with their reasons
    capacity = [r for r in rows if r["status"] == "capacity"]
    assert len(capacity) >= 3 and all(r["reason"] for r in capacity)
    assert "capacity exceeded" in html and "old crashed run" in html
    # older runs: shown with what they have (status from the MLflow state, mode unknown)
    old = {r["run_name"]: r for r in rows if r["experiment"] == "old-dabench"}
    assert old["old tiny L2"]["status"] == "ok" and old["old tiny L2"]["mode"] == "unknown"
    assert float(old["old tiny L2"]["throughput"]) == 123.0 and old["old crashed run"]["status"] == "failed"
    assert "PREDICTED" in html and "measured" in html
    assert "took" in stdout


def test_report_of_a_sweep_is_logged_under_its_parent(report_store, tmp_path):
    from mlflow.tracking import MlflowClient

    done = cli("report", report_store.wse2_parent, "--out", str(tmp_path / "r"), "--log", folder=report_store.folder)
    assert f"logged under parent run {report_store.wse2_parent}" in done.stdout
    rows = read_csv(tmp_path / "r" / "runs.csv")
    assert len(rows) == 4 and {r["platform"] for r in rows} == {"wse2"}
    # a figure without data is a note, not a failure
    html = (tmp_path / "r" / "report.html").read_text()
    assert "no ok runs with a parallel strategy (parallel.strategy = dp, tp or pp) in this selection" in html
    client = MlflowClient(report_store.uri)
    logged = {a.path for a in client.list_artifacts(report_store.wse2_parent, "report")}
    assert {"report/report.html", "report/runs.csv", "report/figures"} <= logged


def test_report_of_a_study_an_experiment_and_a_filter(report_store, tmp_path):
    cli("report", report_store.study, "--out", str(tmp_path / "s"), folder=report_store.folder)
    study = read_csv(tmp_path / "s" / "runs.csv")
    assert len(study) == 2 and {r["tags.optuna_study"] for r in study} == {report_store.study}
    cli("report", "old-dabench", "--out", str(tmp_path / "e"), folder=report_store.folder)
    assert {r["run_name"] for r in read_csv(tmp_path / "e" / "runs.csv")} == {"old tiny L2", "old crashed run"}
    cli("report", "params.hardware.name = 'rdu'", "--out", str(tmp_path / "f"), folder=report_store.folder)
    rdu = read_csv(tmp_path / "f" / "runs.csv")
    assert len(rdu) == 4 and {r["platform"] for r in rdu} == {"rdu"}


def test_unknown_selection_is_one_line_listing_what_exists(report_store, tmp_path):
    done = cli("report", "no-such-thing", "--out", str(tmp_path), folder=report_store.folder, code=2)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "experiments: " in lines[0] and "old-dabench" in lines[0]
    assert report_store.study in lines[0]
    done = cli("report", "0" * 32, "--kind", "run", "--out", str(tmp_path), folder=report_store.folder, code=2)
    assert "no run 000" in done.stderr


def test_compare_side_by_side(report_store, full_report, tmp_path):
    rows = read_csv(full_report[0] / "runs.csv")
    rdu = sorted((r for r in rows if r["platform"] == "rdu"), key=lambda r: r["run_id"])[:2]
    ids = [r["run_id"] for r in rdu]
    done = cli("compare", *ids, "--csv", str(tmp_path / "c.csv"), folder=report_store.folder)
    assert ids[0][:8] in done.stdout and "throughput.samples_per_s" in done.stdout
    table = {r["row"]: r for r in read_csv(tmp_path / "c.csv")}
    assert "throughput.samples_per_s" in table and "tier1.load_imbalance" in table
    differing = [k for k in table if k.startswith("params.")]
    assert differing and all(table[k][ids[0][:8]] != table[k][ids[1][:8]] for k in differing)
    assert "params.model.n_layers" not in table  # the same in both
    done = cli("compare", ids[0], "f" * 32, folder=report_store.folder, code=2)
    assert "unknown run id(s): " + "f" * 32 in done.stderr


# --- the report in a browser -------------------------------------------------------------------

#: injected into a test-only copy: records page errors (failed resources included) and console.error
#: calls, and on load lists the images that did not decode
CHECK_SCRIPT = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  window.__errors.push("error: " + (e.message || (e.target && (e.target.alt || e.target.tagName)))); }, true);
var _error = console.error;
console.error = function () { window.__errors.push("console.error: " + Array.from(arguments).join(" "));
  _error.apply(console, arguments); };
window.addEventListener("load", function () {
  var images = Array.from(document.images);
  var broken = images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
  var out = document.createElement("pre"); out.id = "dabench-check";
  out.textContent = JSON.stringify({images: images.length, broken: broken.map(function (i) { return i.alt; }),
                                    errors: window.__errors});
  document.body.appendChild(out);
});
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [need_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )


def page_check(html: Path) -> dict:
    """Open a copy of ``html`` with CHECK_SCRIPT in headless Chromium; the script's findings."""
    copy = html.with_name("check_" + html.name)
    copy.write_text(html.read_text().replace("<head>", "<head>" + CHECK_SCRIPT, 1))
    done = chromium("--virtual-time-budget=15000", "--dump-dom", copy.as_uri())
    found = re.search(r'<pre id="dabench-check">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_report_opens_in_chromium(full_report, tmp_path):
    out, _ = full_report
    html = out / "report.html"
    # every figure decodes, no page error; and the check can fail: a broken image is caught
    assert page_check(html) == {"images": len(FIGURES), "broken": [], "errors": []}
    broken = tmp_path / "broken.html"
    broken.write_text(
        html.read_text().replace('src="data:image/svg+xml;base64,', 'src="data:image/svg+xml;base64,AAAA', 1)
    )
    assert len(page_check(broken)["broken"]) == 1
    # the report itself: no console message at all (it has no script), and a screenshot that is not blank
    shot = tmp_path / "report.png"
    done = chromium(
        "--enable-logging=stderr", "--v=0", "--window-size=1280,2600", f"--screenshot={shot}", html.as_uri()
    )
    assert not [line for line in done.stderr.splitlines() if ":CONSOLE" in line], done.stderr[-2000:]
    from PIL import Image, ImageStat

    image = Image.open(shot).convert("L")
    assert image.size == (1280, 2600)
    stat = ImageStat.Stat(image)
    assert stat.stddev[0] > 20, f"screenshot looks blank (pixel std {stat.stddev[0]:.1f})"
    dark = sum(image.histogram()[:200]) / (image.size[0] * image.size[1])
    assert dark > 0.01, f"screenshot has almost no drawn pixels ({dark:.2%})"
    kept = os.environ.get("DABENCH_KEEP_SCREENSHOT")
    if kept:
        shutil.copy(shot, kept)
