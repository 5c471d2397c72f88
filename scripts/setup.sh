#!/usr/bin/env bash
# Set up dabench in ./.venv: the CPU build of torch 2.13.0, then dabench (editable) with its
# dependencies and the test extra. Idempotent: a second run only checks what is there.
#   bash scripts/setup.sh            # main environment
#   PYTHON=python3.12 bash scripts/setup.sh
#   EXTRAS=dev,postgres,slurm bash scripts/setup.sh   # more extras in the same install (CI)
#   INSTALLER=pip bash scripts/setup.sh               # pip alone, without uv
# The packages are installed by uv (from PyPI, into .venv) where it installs: the same packages
# pip would install, fetched and unpacked in parallel (seconds, where pip's one thread takes half a
# minute); pip's find-links (this machine's CPU build of torch) are passed on to it. Bytecode is
# compiled at install, as pip does, unless PIP_COMPILE=0 (.ci/run: each module compiled when first imported).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
EXTRAS="${EXTRAS:-dev}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
pip() { .venv/bin/python -m pip "$@" 2>&1 | grep -v "^WARNING: Location" || true; }
# torch is pinned here, not in the package: vendor SDKs bring their own torch
packages=(pip "torch==2.13.0" -e ".[$EXTRAS]")
uv_install() {
  [ "${INSTALLER:-uv}" = uv ] || return 1
  [ -x .venv/bin/uv ] || pip install -q uv
  [ -x .venv/bin/uv ] || return 1
  local options=(--upgrade-package pip)
  [ "${PIP_COMPILE:-1}" = 0 ] || options+=(--compile-bytecode)
  for link in ${PIP_FIND_LINKS:-$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true)}; do
    options+=(--find-links "$link")
  done
  .venv/bin/uv pip install -q --python .venv/bin/python "${options[@]}" "${packages[@]}"
}
if ! uv_install; then  # no uv, or it could not install (an index only pip is configured for): pip
  [ "${INSTALLER:-uv}" != uv ] || echo "setup: uv did not install the packages; installing them with pip" >&2
  pip install -q --upgrade pip
  pip install -q "${packages[@]:1}"
fi
.venv/bin/python -c "import dabench, torch, mlflow, optuna, hydra; print('dabench ready: torch', torch.__version__, '| mlflow', mlflow.__version__, '| optuna', optuna.__version__)"
