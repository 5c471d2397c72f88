#!/usr/bin/env bash
# Create the isolated Cerebras venv that the cstorch / cstorch_cpu backends run in.
#
# cerebras-pytorch 2.10.0 pins torch==2.4.0, numpy==1.25.0 and protobuf==4.21.12, which clash
# with the orchestrator's own stack, so it lives in its own interpreter (runner isolation, see
# docs/vendors.md). PyPI only carries a cp311 wheel, so a Python 3.11 interpreter is required.
# The install takes under a minute through uv (several through pip) and ~6 GB (torch 2.4.0 from PyPI
# is a CUDA build).
#
# Usage: scripts/setup_cerebras_venv.sh [VENV_DIR]      (default: <repo>/.venv-cerebras)
# Env:   PYTHON311=/path/to/python3.11 to choose the base interpreter.
# Idempotent: when VENV_DIR already imports cerebras.pytorch 2.10.0 it exits at once.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv_dir="${1:-$repo_root/.venv-cerebras}"
version="2.10.0"

check() {
  "$venv_dir/bin/python" - "$version" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version("cerebras-pytorch") == sys.argv[1] else 1)
PY
}

if [ -x "$venv_dir/bin/python" ] && check; then
  echo "cerebras venv ready: $venv_dir (cerebras-pytorch $version)"
  exit 0
fi

base_python="${PYTHON311:-$(command -v python3.11 || true)}"
if [ -z "$base_python" ]; then
  echo "error: python3.11 not found (cerebras-pytorch $version ships a cp311 wheel only); set PYTHON311" >&2
  exit 2
fi

start=$(date +%s)
"$base_python" -m venv "$venv_dir"
# through uv where it installs (as scripts/setup.sh: the same packages, fetched in parallel), else pip
compile=(--compile-bytecode)
[ "${PIP_COMPILE:-1}" != 0 ] || compile=()
if ! { "$venv_dir/bin/python" -m pip install --quiet uv && [ -x "$venv_dir/bin/uv" ] &&
  "$venv_dir/bin/uv" pip install --quiet --python "$venv_dir/bin/python" "${compile[@]}" --upgrade-package pip \
    pip "cerebras-pytorch==$version"; }; then
  "$venv_dir/bin/python" -m pip install --quiet --upgrade pip
  "$venv_dir/bin/python" -m pip install --quiet "cerebras-pytorch==$version"
fi
check || { echo "error: cerebras-pytorch $version did not install into $venv_dir" >&2; exit 1; }
echo "cerebras venv created: $venv_dir in $(( $(date +%s) - start )) s"
