"""Secrets given to a sweep leave no trace: not in its output, the best command (printed, in the
study, on the MLflow parent, in results files), `dabench study`, Hydra's files or the stores."""

import pytest

from tests.conftest import run_dabench

TOKEN, PASSWORD, FROM_ENV = "CANARYtok1x", "CANARYpw2x", "CANARYenv3x"


def _run(tmp_path, *args):
    return run_dabench(*args, cwd=tmp_path, env={"DABENCH_TEST_PASSWORD": FROM_ENV}, code=None, timeout=400)


@pytest.mark.slow
def test_secrets_of_a_sweep_appear_nowhere(tmp_path):
    sweep = _run(
        tmp_path,
        "+sweeps=rdu_deploy",
        "hydra.sweeper.space.hook=null",
        "hydra.sweeper.n_trials=2",
        f"+tracking.tags.api_token={TOKEN}",
        f"+tracking.tags.endpoint=https://u:{PASSWORD}@vendor.example/api",
        f"+tracking.tags.note={FROM_ENV}",
        "-m",
    )
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    assert "best: trial" in sweep.stdout and "'+tracking.tags.api_token=***'" in sweep.stdout
    shown = [_run(tmp_path, "study", "--top", "2"), _run(tmp_path, "study", "--json")]
    assert all(done.returncode == 0 for done in shown)
    outputs = sweep.stdout + sweep.stderr + "".join(done.stdout + done.stderr for done in shown)
    leaked = [
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and any(s.encode() in p.read_bytes() for s in (TOKEN, PASSWORD, FROM_ENV))
    ]
    assert leaked == [] and not any(s in outputs for s in (TOKEN, PASSWORD, FROM_ENV))
