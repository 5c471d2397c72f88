"""Start N independent ``python -m dabench +sweeps=... -m`` workers on one study (helpers for the
scale-out tests and benchmarks/scale_out.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: a predict-mode study with a finite grid of 5 x 3 x 3 = 45 deployments (no structured hook)
RDU_GRID = ["+sweeps=rdu_deploy", "hydra.sweeper.space.hook=null"]
#: the same study with its structured chips x tensor-parallel hook, on a narrowed grid: 3 batch
#: sizes x 2 precisions x 9 chip/degree pairs = 54 deployments, several parameter sets apiece
RDU_STRUCTURED = [
    "+sweeps=rdu_deploy",
    "run.batch_size=choice(4, 8, 16)",
    "precision=choice(bf16, mixed)",
    "hardware.options.compile_mode=o1",
]


def worker_command(
    study: str,
    storage: str,
    tracking_uri: str,
    n_trials: int,
    extra: list[str] | None = None,
    sweep: list[str] = RDU_GRID,
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "dabench",
        *sweep,
        f"hydra.sweeper.n_trials={n_trials}",
        f"hydra.sweeper.study_name={study}",
        f"hydra.sweeper.storage={storage}",
        f"tracking.uri={tracking_uri}",
        *(extra or []),
        "-m",
    ]


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "DABENCH_PARENT_RUN_ID")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def start_worker(cwd: Path, command: list[str], log: Path, env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    out = open(log, "w")
    return subprocess.Popen(
        command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=worker_env(env_extra), start_new_session=True
    )
