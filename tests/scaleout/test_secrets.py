"""A password in the tracking URI and in the study storage URL leaves no trace: not in the
worker's output, its files, the study storage, the tracking server's runs, nor `dabench study`.
Slow: a real PostgreSQL (trust auth ignores the password) and a real mlflow server (ignores the
basic-auth userinfo)."""

from __future__ import annotations

import json
import subprocess
import sys

import optuna
import pytest
from mlflow.tracking import MlflowClient

from tests.scaleout.workers import start_worker, worker_command, worker_env

#: one xdist group for the modules that use the session's ``stack``: one worker builds it for both
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("scaleout_stack")]
CANARY = "CANARYpw4711"


def _files_with(folder, text: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_passwords_in_urls_leave_no_trace(stack, tmp_path):
    pg, server = stack
    uri = server.uri.replace("http://", f"http://u:{CANARY}@")
    storage = pg.url("optuna").replace("@", f":{CANARY}@", 1)
    log = tmp_path / "worker.log"
    worker = start_worker(tmp_path, worker_command("secret-study", storage, uri, 2), log)
    assert worker.wait(900) == 0, log.read_text()[-4000:]
    assert "best: trial" in log.read_text() and CANARY not in log.read_text()
    assert _files_with(tmp_path, CANARY) == []

    study = optuna.load_study(study_name="secret-study", storage=pg.url("optuna"))
    stored = json.dumps(
        [study.user_attrs, [(t.user_attrs, t.system_attrs, t.params) for t in study.trials]], default=str
    )
    assert CANARY not in stored and "u:***@" in stored

    client = MlflowClient(server.uri)
    experiment = client.get_experiment_by_name("dabench").experiment_id
    runs = [
        r
        for r in client.search_runs([experiment], max_results=5000)
        if "secret-study" in (r.data.tags.get("optuna_study"), r.data.tags.get("optuna.study"))
    ]
    assert len(runs) == 3  # the parent and its 2 trials
    assert all(CANARY not in json.dumps([r.data.params, r.data.tags]) for r in runs)

    best = subprocess.run(
        [sys.executable, "-m", "dabench", "study", "--storage", storage, "--study", "secret-study", "--top", "2"],
        cwd=tmp_path,
        env=worker_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert best.returncode == 0 and CANARY not in best.stdout + best.stderr
