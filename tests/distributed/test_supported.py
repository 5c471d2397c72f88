"""What the measured parallel path refuses before starting any rank, and why."""

import pytest
import torch

from dabench.config.build import build_run_config
from dabench.core.status import ConfigError, UnsupportedError
from dabench.distributed.run import check_supported, threads_per_rank
from tests.conftest import composed

CPU = torch.device("cpu")


def rc_of(*overrides):
    return build_run_config(composed(list(overrides)))


def test_tp_with_replicas_is_unsupported_with_a_reason():
    with pytest.raises(UnsupportedError, match="DP x TP"):
        check_supported(rc_of("parallel=tp", "parallel.replicas=2"), CPU)


def test_pp_head_on_first_stage_is_unsupported_with_a_reason():
    with pytest.raises(UnsupportedError, match="head_on_last=false"):
        check_supported(rc_of("parallel=pp", "parallel.head_on_last=false"), CPU)


def test_micro_batches_must_divide_the_batch():
    with pytest.raises(ConfigError) as error:
        check_supported(rc_of("parallel=pp", "parallel.micro_batches=3", "run.batch_size=4"), CPU)
    assert error.value.field == "parallel.micro_batches" and error.value.value == 3
    assert "run.batch_size=4" in error.value.valid


def test_more_gpus_than_visible_is_unsupported():
    if torch.cuda.device_count() >= 8:
        pytest.skip("8 GPUs are visible")
    with pytest.raises(UnsupportedError, match="8 GPUs requested"):
        check_supported(rc_of("parallel=dp", "parallel.degree=8"), torch.device("cuda"))


def test_cpu_ranks_share_the_cores_without_oversubscribing(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert threads_per_rank(rc_of("parallel=dp", "parallel.degree=2"), CPU) == 4
    assert threads_per_rank(rc_of("parallel=pp", "parallel.degree=2", "parallel.replicas=8"), CPU) == 1
    assert threads_per_rank(rc_of("parallel=dp", "parallel.degree=2", "run.threads=3"), CPU) == 3


def test_running_inside_torchrun_is_refused_instead_of_launching_ranks_twice(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(UnsupportedError, match="already is rank 1 of 2"):
        check_supported(rc_of("parallel=dp", "parallel.degree=2"), CPU)


def test_fsdp_runs_on_gloo_with_this_torch():
    """torch's FSDP2 (fully_shard) is in this torch: a CPU fsdp job passes the pre-flight."""
    import torch

    from dabench.distributed.run import check_supported
    from tests.perfmodel.helpers import run_config

    for sharding in ("full", "grad_op", "optimizer"):
        check_supported(run_config("cpu", "tiny", "fp32", "fsdp", 2, degree=2, sharding=sharding), torch.device("cpu"))
