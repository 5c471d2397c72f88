"""Item 10: credentials in URIs and tokens in the environment never reach params, tags, config
artifacts or logs; every file a run writes stays inside its own folders."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dabench.tracking.redact import (
    MASK,
    RedactingFilter,
    redact_hydra_output,
    redact_text,
    redact_uri,
    redact_value,
    secret_env_values,
)
from tests.conftest import ROOT

SECRETS = ("hunter22", "tok_supersecret123", "plainvalue99")


def test_uri_credentials_and_query_tokens_are_masked():
    assert redact_uri("postgresql+psycopg://bob:hunter22@db:5432/x") == f"postgresql+psycopg://bob:{MASK}@db:5432/x"
    assert redact_uri("https://h/api?token=abc&x=1") == f"https://h/api?token={MASK}&x=1"
    assert redact_uri("sqlite:////tmp/mlruns/mlflow.db") == "sqlite:////tmp/mlruns/mlflow.db"
    assert redact_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"


def test_environment_tokens_and_secret_names_are_masked():
    env = {"HF_TOKEN": "tok_supersecret123", "PATH": "/usr/bin", "SHORT_TOKEN": "abc"}
    assert secret_env_values(env) == ["tok_supersecret123"]
    assert redact_text("got tok_supersecret123 back", env) == f"got {MASK} back"
    assert redact_text("tracking.tags.api_token=plainvalue99", env) == f"tracking.tags.api_token={MASK}"
    cfg = {"tracking": {"uri": "mysql://u:hunter22@h/db", "tags": {"password": "plainvalue99", "n": 3}}}
    assert redact_value(cfg, env) == {"tracking": {"uri": f"mysql://u:{MASK}@h/db", "tags": {"password": MASK, "n": 3}}}


def test_log_records_are_redacted():
    record = logging.LogRecord(
        "dabench", logging.INFO, __file__, 1, "store %s", ("postgresql://u:hunter22@h/db",), None
    )
    RedactingFilter().filter(record)
    assert "hunter22" not in record.getMessage()


def test_hydra_output_files_are_redacted(tmp_path):
    (tmp_path / "overrides.yaml").write_text("- tracking.uri=postgresql://u:hunter22@h/db\n- run.batch_size=2\n")
    (tmp_path / "config.yaml").write_text("tracking:\n  uri: postgresql://u:hunter22@h/db\n  password: plainvalue99\n")
    redact_hydra_output(tmp_path)
    text = (tmp_path / "overrides.yaml").read_text() + (tmp_path / "config.yaml").read_text()
    assert "hunter22" not in text and "plainvalue99" not in text and "run.batch_size=2" in text


def _all_text(folder: Path) -> str:
    chunks = []
    for path in folder.rglob("*"):
        if (
            path.is_file()
            and not path.is_symlink()
            and path.suffix in (".yaml", ".json", ".log", ".txt", ".csv", ".db", "")
        ):
            chunks.append(path.read_bytes().decode(errors="replace"))
    return "\n".join(chunks)


@pytest.mark.slow
def test_a_run_records_no_secret_and_writes_only_inside_its_folders(tmp_path):
    launch = tmp_path / "launch"
    launch.mkdir()
    outside_before = set(os.listdir(tmp_path))
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "HOME": str(launch),
        "MY_SERVICE_TOKEN": "tok_supersecret123",
    }
    overrides = [
        "hardware=ipu",
        "parallel=pp",
        "run.grad_accum=3",
        "tracking.run_name=../../escape",
        "+tracking.tags.note='postgresql://bob:hunter22@db:5432/x'",
        "+tracking.tags.echo=tok_supersecret123",
        "+tracking.tags.api_token=plainvalue99",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "dabench", *overrides], cwd=launch, capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{launch / 'mlruns' / 'mlflow.db'}")
    [run] = client.search_runs([client.get_experiment_by_name("dabench").experiment_id])
    recorded = " ".join([*run.data.params.values(), *run.data.tags.values(), output, _all_text(launch)])
    for secret in SECRETS:
        assert secret not in recorded, secret
    assert run.data.tags["note"] == f"postgresql://bob:{MASK}@db:5432/x"
    assert run.info.run_name == "../../escape"  # a name, never a path
    assert set(os.listdir(tmp_path)) == outside_before  # nothing written beside the launch folder
    assert not any("escape" in p.name for p in tmp_path.rglob("*"))
