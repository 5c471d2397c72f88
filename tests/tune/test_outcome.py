"""A job's whole outcome comes back in Hydra's JobReturn (no file is read): JobOutcome is a
float with status, reason and mode, and survives pickling (submitit, Ray)."""

import math
import pickle

import cloudpickle
from hydra.core.utils import JobReturn, JobStatus

from dabench.tune.outcome import JobOutcome
from hydra_plugins.dabench_optuna_sweeper.sweeper import DabenchOptunaSweeper


def _returned(value):
    job = JobReturn()
    job.working_dir = "/nonexistent/worker/disk"  # the driver cannot see the worker's files
    job.status = JobStatus.COMPLETED
    job._return_value = value
    return job


def test_job_outcome_is_a_float_that_travels():
    outcome = JobOutcome(
        12.5, "ok", mode="predict", figures={"tier1.load_imbalance": 0.9, "diagnosis": "compute-bound"}
    )
    assert outcome == 12.5 and float(outcome) + 1 == 13.5
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        back = loads(dumps(outcome))
        assert isinstance(back, JobOutcome) and back == 12.5
        assert (back.status, back.reason, back.mode) == ("ok", "", "predict")
        assert back.figures == {"tier1.load_imbalance": 0.9, "diagnosis": "compute-bound"}


def test_a_predicted_results_figures_ride_on_its_outcome():
    """An untracked sweep's table is built from the outcomes alone: step, LI, allocation, band, diagnosis."""
    from dabench import predict
    from dabench.tune.outcome import TABLE_METRICS, job_outcome

    result = predict(["hardware=wse2", "model=gpt2_small", "model.n_layers=2"])
    figures = job_outcome(result).figures
    assert set(TABLE_METRICS) <= set(figures) and figures["diagnosis"] == result.diagnosis[0]
    assert figures["throughput.samples_per_s.lo"] < float(job_outcome(result)) < figures["throughput.samples_per_s.hi"]


def test_the_sweeper_takes_status_reason_and_mode_from_the_job_return():
    sweeper = DabenchOptunaSweeper()
    ok = sweeper._outcome(_returned(JobOutcome(3.0, "ok", mode="predict")))
    assert (float(ok), ok.status, ok.mode) == (3.0, "ok", "predict")
    refused = sweeper._outcome(_returned(JobOutcome(math.nan, "capacity", "needs 2 GiB, has 1 GiB", "predict")))
    assert math.isnan(refused) and refused.status == "capacity" and "2 GiB" in refused.reason
    as_dict = sweeper._outcome(_returned({"objective": None, "status": "oom", "reason": "r", "mode": "measure"}))
    assert math.isnan(as_dict) and (as_dict.status, as_dict.mode) == ("oom", "measure")
    lying = sweeper._outcome(_returned(JobOutcome(math.inf, "ok", mode="measure")))
    assert lying.status == "diverged"


def test_a_trial_on_a_machine_without_the_study_store_is_refused(tmp_path):
    from types import SimpleNamespace

    from dabench.pipeline.preflight import check_parent_store

    here = tmp_path / "mlflow.db"
    here.write_bytes(b"")
    trial = SimpleNamespace(tracking=SimpleNamespace(parent_run_id="abc"))
    single = SimpleNamespace(tracking=SimpleNamespace(parent_run_id=None))
    assert check_parent_store(trial, f"sqlite:///{here}") == []
    elsewhere = f"sqlite:///{tmp_path / 'driver-disk' / 'mlflow.db'}"  # the driver's file, not here
    problems = check_parent_store(trial, elsewhere)
    assert len(problems) == 1 and "tracking server" in str(problems[0]) and problems[0].field == "tracking.uri"
    assert check_parent_store(single, elsewhere) == []  # a plain run creates its own store
    assert check_parent_store(trial, "http://127.0.0.1:5000") == []


def test_a_preflight_refusal_does_not_count_toward_the_budget():
    from dabench.core.status import counts_toward_budget

    job = _returned(None)
    job.status = JobStatus.FAILED
    job._return_value = SystemExit(2)
    outcome = DabenchOptunaSweeper()._outcome(job)
    assert outcome.status == "tracking_error" and not counts_toward_budget(outcome.status)


def test_remote_launchers_need_a_tracking_server():
    import pytest

    from dabench.core.status import ConfigError
    from dabench.tune.sweep import refuse_local_store

    with pytest.raises(ConfigError, match="tracking server"):
        refuse_local_store("sqlite:////home/me/mlruns/mlflow.db", "SlurmLauncher")
    with pytest.raises(ConfigError, match="RayLauncher"):
        refuse_local_store("sqlite:////home/me/mlruns/mlflow.db", "RayLauncher", "10.0.0.5:6379")
    refuse_local_store("sqlite:////home/me/mlruns/mlflow.db", "RayLauncher", "local")
    refuse_local_store("http://10.0.0.5:5000", "SlurmLauncher")


def test_a_bare_number_is_ok_only_when_finite():
    sweeper = DabenchOptunaSweeper()
    assert (sweeper._outcome(_returned(2.5)).status, float(sweeper._outcome(_returned(2.5)))) == ("ok", 2.5)
    for value in (math.nan, "fast"):
        outcome = sweeper._outcome(_returned(value))
        assert math.isnan(outcome) and outcome.status == "crashed" and "without a status" in outcome.reason
