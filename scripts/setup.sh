#!/usr/bin/env bash
# Set up dabench in ./.venv: the CPU build of torch 2.13.0, then dabench (editable) with its
# dependencies and the test extra. Idempotent: a second run only checks what is there.
#   bash scripts/setup.sh            # main environment
#   PYTHON=python3.12 bash scripts/setup.sh
#   EXTRAS=dev,postgres,slurm bash scripts/setup.sh   # more extras in the same install (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
EXTRAS="${EXTRAS:-dev}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
# torch is pinned here, not in the package: vendor SDKs bring their own torch.
.venv/bin/python -m pip install -q "torch==2.13.0" -e ".[$EXTRAS]" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import dabench, torch, mlflow, optuna, hydra; print('dabench ready: torch', torch.__version__, '| mlflow', mlflow.__version__, '| optuna', optuna.__version__)"
