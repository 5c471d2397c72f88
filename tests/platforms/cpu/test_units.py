"""A CPU run's cores: more threads than the CPUs the process may use still occupy only those CPUs,
so its allocation ratio is at most 1 (the run is oversubscribed, not over-allocated)."""

from __future__ import annotations

from dabench.config.build import build_run_config
from dabench.pipeline.execute import execute
from tests.conftest import composed

FAST = ["model.n_layers=1", "run.warmup_steps=1", "run.timed_steps=2", "run.profile_subtasks=false"]


def test_threads_above_the_allowed_cpus_allocate_all_of_them_and_no_more(monkeypatch):
    monkeypatch.setattr("dabench.platforms.cpu.backend.allowed_cpus", lambda: 1)
    result = execute(build_run_config(composed(["hardware.mode=measure", "run.threads=2", *FAST])))
    assert result.status.value == "ok", result.reason
    assert result.profile.units["cores"].allocated == 1 and result.profile.units["cores"].available == 1
    assert result.metrics["tier1.allocation_ratio"] == 1.0
