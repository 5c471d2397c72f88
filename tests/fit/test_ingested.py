"""Ingested vendor runs as fit points (docs/fitting.md, "Ingested runs"): ``dabench ingest DIR --log``
records the config the artifact states under the param names measured runs log, and ``dabench fit
--from-mlflow`` turns a run whose artifact states enough into a point of its platform and machine;
one that does not is listed with the config keys it lacks.

The real artifacts of ../shared/fixtures are ingested as they are. None of them states a whole
decoder model (a compile report prints kernels, not the model; the appliance run is an MNIST MLP;
the SambaFlow folder a logistic regression without a measured rate), so the fittable case uses
the real compile reports 7/11/13 in a Model Zoo 1.x model folder beside a ``params.yaml`` WRITTEN
HERE: the transformer the DABench-LLM sweep compiled (d_model 256, 2 heads, d_ff 1024, enc = dec =
6/12/18 layers) with the batch, sequence and vocabulary that points.csv's WSE-L6/L12/L18 use. The
rates are the compile reports' own (compiler estimates, as points.csv records them).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dabench.fit.evaluate import base_options, predict_point, prepare
from dabench.fit.runs import points_from_runs

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/fixtures (real vendor artifacts) not present")

#: a Model Zoo 1.x params.yaml of the DABench-LLM encoder-decoder (written for this test; the
#: compile reports print neither the model nor the batch): L = encoder = decoder layers
PARAMS_YAML = """\
train_input:
  batch_size: 128
model:
  name: transformer
  encoder_num_hidden_layers: {L}
  decoder_num_hidden_layers: {L}
  d_model: 256
  num_heads: 2
  d_ff: 1024
  src_max_sequence_length: 256
  src_vocab_size: 32000
  share_embedding_weights: true
  mixed_precision: true
runconfig:
  num_csx: 1
"""
REPORTS = {6: "compile_report_7.txt", 12: "compile_report_11.txt", 18: "compile_report_13.txt"}


def _ingest(path: Path, uri: str, experiment: str) -> None:
    from dabench.cli.ingest import main

    assert main([str(path), "--log", "--tracking-uri", uri, "--experiment", experiment]) in (0, 1)


def _points(uri: str, experiment: str):
    from dabench.cli.fit.from_mlflow import run_dicts
    from dabench.report.frame import load_frame

    frame, _ = load_frame(uri, experiment)
    return points_from_runs(run_dicts(frame))


@needs_shared
def test_real_artifacts_are_listed_with_the_config_they_lack(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    _ingest(SHARED / "cerebras/compile_reports/compile_report_7.txt", uri, "vendor")
    _ingest(SHARED / "cerebras/appliance_run", uri, "vendor")
    _ingest(SHARED / "sambanova/logreg", uri, "vendor")
    capsys.readouterr()
    points, left = _points(uri, "vendor")
    assert {(p.platform, p.host_key, p.source) for p in points} == {
        ("wse2", "wse2:cerebras_compile_report", "ingest:cerebras_compile_report"),
        ("wse2", "wse2:cer-cs2-01", "ingest:cerebras_appliance_run"),  # the system run_meta.json names
    }
    assert [x.reason for x in left] == ["no measured throughput (metric throughput.samples_per_s)"]  # SambaFlow
    why = {p.source: u.reason for p in points for u in prepare([p])[1]}
    assert why["ingest:cerebras_compile_report"].startswith(
        "the cerebras_compile_report artifact does not state model.n_layers, model.hidden_size, model.n_heads"
    )
    stated = "(it states hardware.options.compile_estimate, hardware.options.execution_mode)"
    assert stated in why["ingest:cerebras_compile_report"]
    appliance = why["ingest:cerebras_appliance_run"]
    assert "does not state model.n_layers, model.n_heads, model.seq_len, model.vocab_size" in appliance
    assert "model.hidden_size" in appliance and "run.batch_size" in appliance and "precision.name" in appliance

    from dabench.cli.fit import main

    code = main(["--from-mlflow", "vendor", "--tracking-uri", uri, "--no-log", "--name", "vendor_set"])
    out = capsys.readouterr()
    assert code == 1 and "no point could be predicted" in out.err
    assert "== wse2 [wse2:cer-cs2-01]: 0 points used (0 configs), 1 not predictable" in out.out
    assert "does not state model.n_layers, model.n_heads" in out.out


@needs_shared
def test_compile_reports_with_their_params_become_points_of_the_shipped_configs(tmp_path, capsys, monkeypatch):
    """Each real compile report in a model folder with its params.yaml: ingested, it is a point
    whose config is points.csv's WSE-L<n> config (the same prediction to the last digit), and
    ``fit --from-mlflow`` fits wse2 from the three."""
    from dabench.fit.evaluate import predict_point
    from dabench.fit.points import load_points

    monkeypatch.setenv("DABENCH_CONSTANTS_DIR", str(tmp_path / "sets"))
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    for layers, name in REPORTS.items():
        folder = tmp_path / f"model_L{layers}"
        (folder / "cs_0").mkdir(parents=True)
        shutil.copyfile(SHARED / "cerebras/compile_reports" / name, folder / "cs_0" / "compile_report.txt")
        (folder / "params.yaml").write_text(PARAMS_YAML.format(L=layers))
        _ingest(folder, uri, "wse_sweep")
    points, left = _points(uri, "wse_sweep")
    assert not left and {(p.platform, p.host_key) for p in points} == {("wse2", "wse2:cerebras_compile_report")}
    assert not prepare(points)[1]  # every one predictable
    shipped = {p.id: p for p in load_points()}
    base = base_options("wse2")
    for p in points:
        layers = p.rc.model.n_layers // 2
        assert (p.rc.model.cross_attention_layers, p.rc.run.batch_size, p.precision) == (layers, 128, "mixed")
        assert p.rc.hardware.options["execution_mode"] == "pipelined"
        assert predict_point(p, base) == pytest.approx(predict_point(shipped[f"WSE-L{layers}"]), rel=1e-9)

    from dabench.cli.fit import main

    code = main(["--from-mlflow", "wse_sweep", "--tracking-uri", uri, "--no-log", "--name", "wse_ingested"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "== wse2 [wse2:cerebras_compile_report]: 3 points used (3 configs)" in out
    assert (tmp_path / "sets" / "wse_ingested.json").is_file()


@needs_shared
def test_an_appliance_run_whose_trainer_params_state_a_decoder_is_a_point(tmp_path):
    """The real appliance run folder with a trainer_params.yaml stating a GPT-2 decoder (edited
    here; the real one is an MNIST MLP): a point of its system, priced by the wse2 model. Its rate
    is still the MNIST run's: this checks the path, not a number."""
    folder = tmp_path / "appliance_run"
    shutil.copytree(SHARED / "cerebras/appliance_run", folder)
    text = (folder / "trainer_params.yaml").read_text()
    text = text.replace(
        "      name: fc_mnist\n      mixed_precision: true\n      depth: 3\n      hidden_size: 128\n",
        "      name: gpt2\n      mixed_precision: true\n      num_hidden_layers: 12\n      hidden_size: 768\n"
        "      num_heads: 12\n      max_position_embeddings: 1024\n      vocab_size: 50257\n",
    )
    assert "num_heads: 12" in text
    (folder / "trainer_params.yaml").write_text(text)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    _ingest(folder, uri, "appliance")
    points, left = _points(uri, "appliance")
    assert not left and [(p.platform, p.host_key) for p in points] == [("wse2", "wse2:cer-cs2-01")]
    assert not prepare(points)[1]
    p = points[0]
    assert (p.rc.model.name, p.rc.model.n_layers, p.rc.model.hidden_size, p.rc.run.batch_size) == ("gpt2", 12, 768, 64)
    assert p.published == pytest.approx(1319.17) and predict_point(p, base_options("wse2")) > 0
