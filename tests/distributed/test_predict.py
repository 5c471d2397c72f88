"""Validate mode: measured collectives priced by the link model, and the relative error."""

import pytest

from dabench.config.build import build_run_config
from dabench.core.profile import CommEvent
from dabench.perfmodel.comm_check import comm_prediction_metrics
from tests.conftest import composed


def test_each_measured_collective_is_priced_over_the_cpu_loopback_link():
    rc = build_run_config(composed(["parallel=dp", "parallel.degree=2"]))
    link = rc.hardware.link("intra")
    events = [
        CommEvent("dp", "allreduce", 1e6, 0.5, 2, count=3),
        CommEvent("pp", "p2p", 1e4, 0.1, 2, count=8),
        CommEvent("pp", "bubble", 0.0, 0.2, 2),
    ]
    measured = {"tier2.comm_transfer_s.allreduce": 0.01, "tier2.comm_transfer_s.p2p": 0.002}
    out = comm_prediction_metrics(rc, events, measured)
    allreduce = 3 * (2 * (2 - 1) / 2 * 1e6 / link.bandwidth_Bps + 2 * (2 - 1) * link.latency_s)
    p2p = 8 * (1e4 / link.bandwidth_Bps + link.latency_s)
    assert out["predict.comm_time_s.dp.allreduce"] == pytest.approx(allreduce)
    assert out["predict.rel_error.comm_time_s.dp.allreduce"] == pytest.approx((allreduce - 0.01) / 0.01)
    assert out["predict.comm_time_s.pp.p2p"] == pytest.approx(p2p)
    assert out["predict.rel_error.comm_time_s"] == pytest.approx((allreduce + p2p - 0.012) / 0.012)
    assert not any("bubble" in key for key in out)
