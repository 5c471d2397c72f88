"""The status vocabulary: every status has a state and a budget rule, and docs/metrics.md lists them."""

from pathlib import Path

import pytest

from dabench.core import status as st
from dabench.core.status import Status


def test_every_status_is_described():
    assert set(st.VOCABULARY) == set(Status)
    for s in Status:
        assert st.mlflow_state(s) in ("FINISHED", "FAILED", "KILLED")
        assert st.info(s).meaning


def test_states_and_budget():
    assert st.mlflow_state("ok") == "FINISHED"
    assert st.mlflow_state(Status.CAPACITY) == "FAILED"
    assert st.mlflow_state("interrupted") == "KILLED" and st.mlflow_state("killed") == "KILLED"
    assert st.counts_toward_budget("capacity") and st.counts_toward_budget("invalid_config")
    assert not st.counts_toward_budget("interrupted") and not st.counts_toward_budget("tracking_error")
    assert st.counts_toward_budget(None)
    assert st.is_ok("ok") and st.is_ok(Status.OK) and not st.is_ok("oom") and not st.is_ok(None)


def test_unknown_status_names_the_valid_ones():
    with pytest.raises(ValueError, match="valid: ok, oom"):
        st.parse("exploded")


def test_exceptions_carry_their_status():
    assert st.ConfigError("a", 1, "b").status is Status.INVALID_CONFIG
    assert st.Diverged("nan loss").status is Status.DIVERGED
    assert st.CapacityError("SRAM", 2**21, 2**20).reason.startswith("SRAM capacity exceeded")


@pytest.mark.parametrize(
    "cls, status",
    [
        (st.DabenchError, Status.CRASHED),
        (st.UnsupportedError, Status.UNSUPPORTED),
        (st.CompileError, Status.COMPILE_ERROR),
        (st.OutOfMemory, Status.OOM),
        (st.CrashedError, Status.CRASHED),
        (st.RunTimeout, Status.TIMEOUT),
        (st.DiskFull, Status.DISK_FULL),
        (st.Diverged, Status.DIVERGED),
        (st.InvalidResult, Status.INVALID_RESULT),
        (st.IncompleteArtifact, Status.INCOMPLETE_ARTIFACT),
    ],
)
def test_each_reason_only_exception_carries_its_status_and_reason(cls, status):
    error = cls("why")
    assert isinstance(error, st.DabenchError) and cls.status is status and error.status is status
    assert error.reason == "why" and str(error) == "why" and cls.__name__ in vars(st)


def test_a_subclass_without_a_status_keyword_keeps_its_parents():
    class Inner(st.DiskFull):
        pass

    assert Inner("x").status is Status.DISK_FULL and isinstance(st.ConfigError("a", 1, "b"), ValueError)


def test_docs_list_the_vocabulary():
    text = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    block = text.split("<!-- status-table:start -->\n", 1)[1].split("\n<!-- status-table:end -->", 1)[0]
    rows = ["| status | MLflow state | counts toward budget | meaning |", "|---|---|---|---|"]
    rows += [
        f"| `{status.value}` | {i.mlflow_state} | {'yes' if i.counts_toward_budget else 'no'} | {i.meaning} |"
        for status, i in st.VOCABULARY.items()
    ]
    assert block == "\n".join(rows)
