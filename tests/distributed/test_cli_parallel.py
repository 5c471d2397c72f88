"""The issue's acceptance command, end to end: one ok measured run in MLflow with Tier-2
metrics, logged by the launching process only; and validate mode's comm-model check."""

import pytest
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow

SHORT = ["run.warmup_steps=1", "run.timed_steps=3"]


def test_pp_acceptance_command_records_one_ok_measured_run_with_tier2_metrics(tmp_path, run_cli):
    run_cli(
        "parallel=pp", "parallel.degree=2", "parallel.layers_per_stage=[1,1]", "model.n_layers=2", *SHORT, timeout=120
    )
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])  # one writer
    assert run.data.tags["dabench.status"] == "ok", run.data.tags.get("dabench.reason")
    assert run.data.tags["dabench.mode"] == "measure"
    metrics = run.data.metrics
    for name in (
        "tier2.scaling_efficiency",
        "tier2.comm_fraction",
        "tier2.busbw_GBps.p2p",
        "tier2.bubble_time_s",
        "tier1.load_imbalance",
        "memory.peak_bytes.dram.rank1",
    ):
        assert metrics[name] > 0, name
    assert metrics["chips"] == 2


def test_validate_mode_prices_the_measured_collectives_with_the_link_model(tmp_path, run_cli):
    """The README's validate command as written (tests/docs/test_examples.py leaves it to this test)."""
    run_cli("parallel=dp", "parallel.degree=2", "hardware.mode=validate", *SHORT, timeout=120)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    assert run.data.tags["dabench.status"] == "ok", run.data.tags.get("dabench.reason")
    assert run.data.tags["dabench.mode"] == "measure" and run.data.tags.get("dabench.validate") == "true"
    metrics = run.data.metrics
    measured = metrics["tier2.comm_transfer_s.allreduce"]
    predicted = metrics["predict.comm_time_s.dp.allreduce"]
    assert measured > 0 and predicted > 0
    assert metrics["predict.rel_error.comm_time_s"] == pytest.approx((predicted - measured) / measured)
