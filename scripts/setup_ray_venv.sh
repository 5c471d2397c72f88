#!/usr/bin/env bash
# .venv-ray: Ray and hydra-ray-launcher for the Ray scale-out test (tests/scaleout/test_ray.py),
# kept out of .venv because the launcher needs joblib<1.6 and cloudpickle<3 (older than what
# .venv resolves to). The venv holds only Ray, the launcher and their pins; a .pth file appends
# .venv's site-packages after them, so dabench, torch and mlflow come from .venv.
#   bash scripts/setup_ray_venv.sh
#   bash scripts/setup_ray_venv.sh --install-only   # Ray's packages only: needs no .venv (CI, early)
#   bash scripts/setup_ray_venv.sh --link-only      # then the link to .venv and the import check
#   PYTHONPATH=$PWD .venv-ray/bin/python -m pytest -m slow tests/scaleout/test_ray.py
# On a cluster, install it into dabench's own environment instead: pip install 'dabench[ray]'.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
step="${1:-all}"
case "$#:$step" in [01]:all | 1:--install-only | 1:--link-only) ;; *) echo "usage: $0 [--install-only | --link-only]" >&2; exit 2 ;; esac
if [ "$step" = all ] && [ ! -x .venv/bin/python ]; then  # fail before a long install, not after
  echo ".venv is missing: run scripts/setup.sh first (or $0 --install-only)" >&2
  exit 1
fi
if [ "$step" != "--link-only" ]; then
  [ -x .venv-ray/bin/python ] || "$PYTHON" -m venv .venv-ray
  packages=("hydra-ray-launcher>=1.2" "joblib<1.6" "cloudpickle<3" "hydra-core>=1.3.2,<1.4" "omegaconf>=2.3,<2.4")
  pip() { .venv-ray/bin/python -m pip "$@" 2>&1 | grep -v "^WARNING: Location" || true; }
  # through uv where it installs (as scripts/setup.sh: the same packages, in parallel), else pip
  compile=(--compile-bytecode)
  [ "${PIP_COMPILE:-1}" != 0 ] || compile=()
  [ -x .venv-ray/bin/uv ] || pip install -q uv
  if ! { [ -x .venv-ray/bin/uv ] && .venv-ray/bin/uv pip install -q --python .venv-ray/bin/python "${compile[@]}" "${packages[@]}"; }; then
    pip install -q "${packages[@]}"
  fi
fi
[ "$step" != "--install-only" ] || { echo "ray venv installed; link it to .venv with: $0 --link-only"; exit 0; }
[ -x .venv-ray/bin/python ] || { echo ".venv-ray is missing: run $0 first" >&2; exit 1; }
[ -x .venv/bin/python ] || { echo ".venv is missing: run scripts/setup.sh first" >&2; exit 1; }
main_site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
ray_site=$(.venv-ray/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "import site; site.addsitedir('$main_site')" > "$ray_site/zz_dabench_main.pth"
.venv-ray/bin/python -c "import ray, cloudpickle, joblib, dabench, mlflow; print('ray venv ready: ray', ray.__version__, '| cloudpickle', cloudpickle.__version__, '| joblib', joblib.__version__)"
