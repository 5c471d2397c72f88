"""The in-process grid (dabench/pipeline/grid.py): same configs, same MLflow records as one run at a time;
the default sweeper's one-composition-per-shape check; the per-run plot switch."""

from __future__ import annotations

import pytest

from dabench import api
from dabench.config.paths import CONF_DIR
from dabench.pipeline.grid import Composer, expand, run_grid
from dabench.pipeline.job import execute_job, prepare

#: predicted configurations that end ok, capacity and invalid_config (a value the schema refuses)
STUDY = [
    "hardware=ipu",
    "parallel=pp",
    "model=gpt2_test",
    "precision=fp16",
    "run.grad_accum=64",
    "hardware.options.available_memory_proportion=0.15",
    "hardware.options.embedding_serialization_factor=4",
]
JOBS = [
    [*STUDY, 'parallel.placement="0 4"'],
    [*STUDY, 'parallel.placement="0 10"'],
    [*STUDY, 'parallel.placement="0 2 2 2"', "run.batch_size=2"],
    ["hardware=rdu", "model=gpt2_small", "precision=mixed", "run.batch_size=4", "hardware.options.compile_mode=o1"],
    ["hardware=wse2", "model=gpt2_test", "run.batch_size=0"],
]


def test_composer_gives_the_config_hydra_composes():
    composer = Composer()
    jobs = JOBS + [
        ["hardware=ipu", "model=gpt2_test", "run.threads=null", "run.lr=0.001", "tracking.tags={}"],
        ["hardware=ipu", "model=gpt2_test", "model.n_layers=8"],
        ["hardware=cuda", "+tracking.tags.owner=me", "model.n_heads=4"],
        ["model=tiny", "~run.seed"],
        [
            *JOBS[0],
            "++tracking.uri=sqlite:////tmp/x.db",
            "++tracking.parent_run_id=abc",
            "+tracking.tags.trial=3",
            "++tracking.tags.sweep=s",
        ],
    ]
    for job in jobs:
        assert composer.compose(job) == api.compose(job), job
    assert composer.full_compositions == 2  # the mapping value / the deletion (the tuner's ++/+ keys are set)
    assert len(composer._bases) == 6  # one Hydra composition per distinct set of group choices
    with pytest.raises(Exception, match="run.seed"):  # adding a key that exists: Hydra's own error
        composer.compose(["hardware=cuda", "+run.seed=1"])


def test_expand_is_the_basic_sweepers_grid():
    jobs = expand(["hardware=cuda", "model.n_layers=2,4,8", "run.batch_size=1,2"])  # cuda: no default sweep
    assert len(jobs) == 6
    assert jobs[0] == ["hardware=cuda", "model.n_layers=2", "run.batch_size=1"]
    assert {tuple(j[1:]) for j in jobs} == {
        (f"model.n_layers={n}", f"run.batch_size={b}") for n in (2, 4, 8) for b in (1, 2)
    }
    # a -m of hardware=ipu parallel=pp sweeps the default study (conf/default_sweep/ipu_pp.yaml)
    study = expand(["hardware=ipu", "parallel=pp"])
    assert len(study) >= 20 and all("model=gpt2_test" in j for j in study)
    assert expand(["hardware=ipu", "parallel=pp", "model=gpt2_small"])[0].count("model=gpt2_small") == 1


def _records(client, experiment: str) -> list:
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"], max_results=1000)
    return [r for r in runs if r.data.tags.get("dabench.parent") != "true"]


@pytest.mark.slow
def test_grid_records_what_the_one_at_a_time_path_records(isolated_env, monkeypatch):
    from mlflow.tracking import MlflowClient

    from dabench.pipeline import grid

    client = MlflowClient()
    for job in JOBS:  # the one-at-a-time path (dabench.pipeline.record.record_run, as the Hydra task)
        api.run([*job, "tracking.experiment=single"], record=True)
    monkeypatch.setattr(grid, "record_run", lambda *a, **k: pytest.fail("a predicted run recorded one at a time"))
    runs = run_grid([[*job, "tracking.experiment=grid"] for job in JOBS], parent_name="grid test", flush_every=2)
    assert [r.result.status.value for r in runs] == ["ok", "capacity", "ok", "ok", "invalid_config"]
    assert all(r.run_id for r in runs)  # each written by the batch recorder (record_run fails above)

    single, grid = _records(client, "single"), _records(client, "grid")
    assert len(single) == len(grid) == len(JOBS)
    volatile = {"mlflow.parentRunId", "mlflow.note.content"}  # the description names its own experiment override
    for one, many in zip(single, grid, strict=False):
        assert many.data.tags["mlflow.note.content"] == one.data.tags["mlflow.note.content"].replace(
            "tracking.experiment=single", "tracking.experiment=grid"
        )
        assert many.data.params == {**one.data.params, "tracking.experiment": "grid"}
        assert many.data.metrics == one.data.metrics
        assert {k: v for k, v in many.data.tags.items() if k not in volatile} == {
            k: v for k, v in one.data.tags.items() if k not in volatile
        }
        assert many.info.status == one.info.status and many.info.run_name == one.info.run_name
    assert [r.info.status for r in grid] == ["FINISHED", "FAILED", "FINISHED", "FINISHED", "FAILED"]

    # real times: each run's own window, in order, none before the grid's parent opened
    parent = client.get_run(grid[0].data.tags["mlflow.parentRunId"])
    assert parent.data.tags["dabench.parent"] == "true" and parent.info.status == "FINISHED"
    assert parent.data.metrics["jobs.total"] == 5 and parent.data.metrics["jobs.ok"] == 3
    assert {r.data.tags["mlflow.parentRunId"] for r in grid} == {parent.info.run_id}
    previous_end = parent.info.start_time
    for r in grid:
        assert previous_end <= r.info.start_time <= r.info.end_time <= parent.info.end_time
        previous_end = r.info.end_time
    assert [r.run_id for r in runs] == [r.info.run_id for r in grid]


@pytest.mark.slow
def test_grid_under_a_given_parent_and_with_tracking_off(isolated_env):
    from mlflow.tracking import MlflowClient

    from dabench.tracking.lifecycle import open_run

    parent = open_run(experiment="dabench", uri=None, run_name="study", standard=False)
    runs = run_grid([JOBS[0], JOBS[3]], parent_run_id=parent.run_id)
    children = MlflowClient().search_runs(
        [parent.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent.run_id}'"
    )
    assert sorted(r.info.run_id for r in children) == sorted(r.run_id for r in runs)
    off = run_grid([[*JOBS[0], "tracking.enabled=false"]])
    assert off[0].run_id is None and off[0].result.status.value == "ok"


def test_default_sweeper_composes_one_job_per_shape():
    from hydra.core.plugins import Plugins

    from hydra_plugins.dabench_basic_sweeper.sweeper import representatives, shape

    batch = [["model=gpt2_test", f"run.batch_size={b}", f'parallel.placement="0 {n}"'] for b in (1, 2) for n in (4, 6)]
    batch.append(["model=gpt2_small", "run.batch_size=1", 'parallel.placement="0 4"'])
    batch.append(["model=gpt2_small", "run.batch_size=1", "+run.extra=1"])
    assert representatives(batch) == [batch[0], batch[4], batch[5]]
    assert shape(["+sweeps=ipu_deploy", "a.b=1"]) == ("+sweeps=ipu_deploy", "a.b=*")
    Plugins.instance()  # scans hydra_plugins: dabench's basic sweeper is the default -m sweeper
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        default = compose("config", overrides=["hardware=ipu"], return_hydra_config=True)
        study = compose("config", overrides=["+sweeps=ipu_deploy"], return_hydra_config=True)
    assert default.hydra.sweeper._target_ == "hydra_plugins.dabench_basic_sweeper.sweeper.BasicSweeper"
    assert "dabench_optuna_sweeper" in study.hydra.sweeper._target_  # a config's own choice still wins


def test_per_run_plot_follows_run_plots(tmp_path):
    from dabench.report.artifacts import wants_plot, write_artifacts

    assert not wants_plot({"run": {"plots": "auto"}}, "predict") and wants_plot({"run": {"plots": "auto"}}, "measure")
    assert wants_plot({"run": {"plots": "always"}}, "predict") and not wants_plot(
        {"run": {"plots": "never"}}, "measure"
    )
    for choice, drawn in (("auto", False), ("always", True)):
        container = api.compose([*JOBS[0], f"run.plots={choice}"])
        result = execute_job(prepare(container))
        folder = write_artifacts(tmp_path / choice, result.config, result, "t", 1)
        assert (folder / "roofline.svg").exists() is drawn
        assert (folder / "subtasks.csv").exists() and (folder / "result.json").exists()


@pytest.mark.slow
def test_inprocess_launcher_keeps_the_multirun_parent(tmp_path):
    """`-m hydra/launcher=dabench_inprocess`: Hydra's sweep and parent run, the jobs run by the grid."""
    import subprocess
    import sys

    from mlflow.tracking import MlflowClient

    from tests.conftest import cli_env

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dabench",
            "hardware=cuda",
            "hardware.mode=predict",
            "model=gpt2_small",
            "model.n_layers=6,12",
            "run.batch_size=1,2",
            "hydra/launcher=dabench_inprocess",
            "-m",
        ],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("dabench: ok | PREDICTED") == 4
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    parents = [r for r in runs if r.data.tags.get("dabench.parent") == "true"]
    children = [r for r in runs if r.data.tags.get("dabench.parent") != "true"]
    assert len(parents) == 1 and len(children) == 4
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    assert parents[0].data.metrics["jobs.ok"] == 4
    assert {(r.data.params["model.n_layers"], r.data.params["run.batch_size"]) for r in children} == {
        (n, b) for n in ("6", "12") for b in ("1", "2")
    }


def test_grid_with_tracking_off_keeps_its_results(tmp_path):
    """Not recorded, still kept: results.csv holds one row per configuration and the table says why."""
    import csv

    from dabench.pipeline.grid import write_results

    runs = run_grid([[*job, "tracking.enabled=false"] for job in (JOBS[0], JOBS[4])])
    assert [r.run_id for r in runs] == [None, None]
    text = write_results(runs, tmp_path, None)
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert sorted(r["status"] for r in rows) == ["invalid_config", "ok"]
    assert "tracking.enabled=false" in text and "outbox" not in text
