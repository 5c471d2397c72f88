"""Cerebras software releases as data: every WSE-2 calibration point names its release, the
default is the newest of them, and an older release's weight-streaming run is priced with the
documented release-to-release speed-ups (options.sdk_release; docs/perfmodel.md, "WSE-2")."""

import re

import pytest

from dabench.core.status import ConfigError
from dabench.fit.points import load_points
from dabench.fit.sources import load_sources
from dabench.platforms.wse.knobs import RELEASES
from tests.perfmodel.helpers import load, predict, run_config

STREAMING = {"execution_mode": "weight_streaming"}


def _release(point) -> str:
    match = re.search(r"hardware\.options\.sdk_release=(\S+)", " ".join(point.overrides))
    assert match, f"{point.id} names no release"
    return match.group(1)


def _gptj(release: str) -> float:
    rc = run_config(
        "wse2", model="gptj_6b", batch_size=65, options={**STREAMING, "sdk_release": release}, parallel="dp", degree=2
    )
    return predict(rc)[1]["throughput.samples_per_s"]


def test_every_point_names_its_release_and_the_default_is_the_newest():
    releases = {_release(p) for p in load_points() if p.platform == "wse2"}
    assert releases <= set(RELEASES)
    assert load("hardware", "wse2")["options"]["sdk_release"] == max(releases, key=RELEASES.index)


def test_older_gpt_runs_are_predicted_with_their_release_not_excluded():
    """C6 (R1.7.1) and C7 (R1.8.0) are check points; R2.0.2's documented ~30% applies before it."""
    points = {p.id: p for p in load_points()}
    assert points["C6"].use == points["C7"].use == "check"
    new, old = _gptj("2.3.0"), _gptj("1.8.0")
    assert new / old == pytest.approx(load("hardware", "wse2")["options"]["release_speedup_2_0_2"], rel=1e-5)
    assert _gptj("2.0.3") == pytest.approx(new, rel=1e-12) and _gptj("1.7.1") == pytest.approx(old, rel=1e-12)


def test_the_speedup_is_a_sourced_figure_not_a_fit():
    entry = load_sources("wse2")["options.release_speedup_2_0_2"]
    assert entry.kind == "source" and "2.0.2" in entry.locator and not entry.points


def test_pipelined_runs_have_no_release_effect():
    base = predict(run_config("wse2", model="bert_large", batch_size=256, options={"sdk_release": "1.6.0"}))
    newer = predict(run_config("wse2", model="bert_large", batch_size=256, options={"sdk_release": "2.3.0"}))
    assert base[1]["throughput.samples_per_s"] == newer[1]["throughput.samples_per_s"]


def test_an_unknown_release_is_refused_with_the_valid_ones():
    with pytest.raises(ConfigError) as error:
        predict(run_config("wse2", options={"sdk_release": "9.9"}))
    assert "sdk_release" in str(error.value) and "2.3.0" in str(error.value)
