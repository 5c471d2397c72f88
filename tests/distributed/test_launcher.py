"""The launcher: ranks get torchrun's environment, results come back in rank order, and any
failure ends the whole job with the failing rank's error and no process left behind."""

import os
import sys
import threading
import time

import pytest

from dabench.distributed.launcher import RankFailure, launch
from tests.distributed.procs import ranks_of_launcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_results_come_back_in_rank_order_with_torchrun_environment():
    results = launch("tests.distributed.targets:echo", {"x": 7}, 3, 60)
    assert [r["rank"] for r in results] == [0, 1, 2]
    assert all(r["world_size"] == 3 and r["x"] == 7 and r["master"] == "127.0.0.1" for r in results)
    assert len({r["pid"] for r in results}) == 3
    assert ranks_of_launcher(os.getpid()) == []


def test_a_raising_rank_fails_the_job_at_once_with_its_error_and_traceback():
    start = time.monotonic()
    with pytest.raises(RankFailure) as failure:
        launch("tests.distributed.targets:rank1_raises", {}, 2, 60)
    assert time.monotonic() - start < 15  # not the 30 s rank 0 would sleep, nor the timeout
    assert failure.value.rank == 1
    assert "rank 1 of 2 failed: ValueError: rank one is unhappy" in failure.value.reason
    assert "Traceback" in failure.value.reason and "rank 0: killed by the launcher" in failure.value.reason
    assert ranks_of_launcher(os.getpid()) == []


def test_a_rank_exiting_without_an_error_record_is_named_with_its_exit_code():
    with pytest.raises(RankFailure) as failure:
        launch("tests.distributed.targets:rank0_exits_silently", {}, 2, 60)
    assert failure.value.rank == 0
    assert "exited with code 3 without recording an error" in failure.value.reason
    assert ranks_of_launcher(os.getpid()) == []


def test_a_hung_job_is_killed_at_the_timeout():
    outcome = {}

    def run():
        try:
            launch("tests.distributed.targets:sleeps", {}, 2, 3.0)
        except RankFailure as failure:
            outcome["failure"] = failure

    start = time.monotonic()
    job = threading.Thread(target=run)
    job.start()
    time.sleep(1.5)
    assert len(ranks_of_launcher(os.getpid())) == 2  # the orphan check does see live ranks
    job.join(30)
    assert 3.0 <= time.monotonic() - start < 10
    assert "still running after parallel.timeout_s=3 s" in outcome["failure"].reason
    assert ranks_of_launcher(os.getpid()) == []


def test_a_rank_leaves_its_process_group_with_no_backend_thread_alive():
    # gloo's worker threads, its transport loop and rank 0's store server all end with the group,
    # before the interpreter exits (a worker alive then can abort the rank at exit)
    results = launch("tests.distributed.targets:zero_step_in_a_group", {}, 2, 120)
    for result in results:
        assert result["during"] > result["before"]
        assert result["after"] == result["before"], result
