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
    outcome = JobOutcome(12.5, "ok", mode="predict")
    assert outcome == 12.5 and float(outcome) + 1 == 13.5
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        back = loads(dumps(outcome))
        assert isinstance(back, JobOutcome) and back.to_dict() == outcome.to_dict()


def test_the_sweeper_takes_status_reason_and_mode_from_the_job_return():
    sweeper = DabenchOptunaSweeper()
    ok = sweeper._outcome(_returned(JobOutcome(3.0, "ok", mode="predict")))
    assert (ok.value, ok.status, ok.mode) == (3.0, "ok", "predict")
    refused = sweeper._outcome(_returned(JobOutcome(math.nan, "capacity", "needs 2 GiB, has 1 GiB", "predict")))
    assert math.isnan(refused.value) and refused.status == "capacity" and "2 GiB" in refused.reason
    as_dict = sweeper._outcome(_returned({"objective": None, "status": "oom", "reason": "r", "mode": "measure"}))
    assert math.isnan(as_dict.value) and (as_dict.status, as_dict.mode) == ("oom", "measure")
    lying = sweeper._outcome(_returned(JobOutcome(math.inf, "ok", mode="measure")))
    assert lying.status == "diverged"
