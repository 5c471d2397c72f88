"""The default predicted sweep, end to end through `python -m dabench` (small: 2 jobs)."""

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import composed


def test_default_ipu_sweep_covers_the_paper_study():
    """`hardware=ipu parallel=pp -m` sweeps >= 20 placements on 2, 4, 8 and 16 IPUs."""
    from hydra import compose, initialize_config_dir

    from dabench.core.placement import Placement
    from tests.conftest import CONF

    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("config", overrides=["hardware=ipu", "parallel=pp"], return_hydra_config=True)
    params = cfg.hydra.sweeper.params
    placements = [p.strip().strip('"') for p in params["parallel.placement"].split('",')]
    assert len(placements) >= 20
    assert {len(Placement.parse(p)) for p in placements} == {2, 4, 8, 16}
    assert params["model"] == "gpt2_test" and params["precision"] == "fp16"
    # a single run keeps config.yaml's own values; the sweep only applies under -m
    single = composed(["hardware=ipu", "parallel=pp"])
    assert single["model"]["name"] == "tiny" and single["parallel"]["placement"] is None
    assert composed(["hardware=wse2"])["precision"]["name"] == "mixed"  # CSX has no fp32 training
    assert composed(["hardware=wse2", "precision=fp16"])["precision"]["name"] == "fp16"


@pytest.mark.slow
def test_predicted_sweep_records_ok_and_capacity_children(tmp_path, run_cli):
    """Command-line sweep values win over the default sweep's: two placements, two child runs."""
    done = run_cli(
        "-m", "hardware=ipu", "parallel=pp", 'parallel.placement="0 4","0 10"', "run.grad_accum=64", timeout=240
    )
    assert "PREDICTED" in done.stdout
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("dabench")
    children = [r for r in client.search_runs([experiment.experiment_id]) if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2
    by_layers = {r.data.params["model.n_layers"]: r for r in children}
    assert set(by_layers) == {"4", "10"}
    assert all(r.data.tags["dabench.mode"] == "predict" for r in children)
    ok, failed = by_layers["4"], by_layers["10"]
    assert ok.data.tags["dabench.status"] == "ok" and failed.data.tags["dabench.status"] == "capacity"
    assert "In-Processor-Memory" in failed.data.tags["dabench.reason"]
    assert ok.data.params["parallel.degree"] == "2" and ok.data.params["parallel.layers_per_stage"] == "[0, 4]"
    for name in (
        "throughput.samples_per_s",
        "tier1.allocation_ratio",
        "tier1.load_imbalance",
        "tier1.compute_efficiency",
        "tier2.scaling_efficiency",
        "tier2.comm_fraction",
    ):
        assert ok.data.metrics[name] > 0, name
    artifacts = {a.path for a in client.list_artifacts(ok.info.run_id)}
    assert "subtasks.csv" in artifacts and "roofline.svg" not in artifacts  # run.plots=auto: no plot when predicted
