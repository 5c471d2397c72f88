"""CPU ceilings by calibration: CPUs differ, so their peak FLOP/s and DRAM bandwidth are measured.

- peak FLOP/s at a dtype: best of several 2*n^3 / t for an n x n matmul (n = 2048 for fp32,
  1024 for 16-bit types, which many CPUs emulate slowly), with the run's thread count.
- bandwidth: best of several copies of a 256 MiB fp32 tensor, counting read + write bytes
  (2 * 256 MiB / t).

A peak is the best the machine can do, and load from other processes only ever lowers a
measurement, so each process measures once per key and the cache in
``~/.cache/dabench/calibration.json`` (``DABENCH_CACHE_DIR`` overrides the folder), keyed by CPU
model, thread count and torch version, keeps the best value seen on this machine. Jobs of one
sweep share the process's measurement.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import torch

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
CALIBRATION_SECONDS = 0.4  #: time budget per measurement (best of the repeats inside it)


def cache_path() -> Path:
    folder = Path(os.environ.get("DABENCH_CACHE_DIR", Path.home() / ".cache" / "dabench"))
    return folder / "calibration.json"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _key(kind: str, threads: int) -> str:
    return f"{cpu_model()}|threads={threads}|torch={torch.__version__}|{kind}"


def _best_time(fn, budget_s: float = CALIBRATION_SECONDS, min_reps: int = 3) -> float:
    fn()  # warm-up: page in, pick kernels
    best, spent, reps = float("inf"), 0.0, 0
    while reps < min_reps or spent < budget_s:
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best, spent, reps = min(best, elapsed), spent + elapsed, reps + 1
        if reps >= 50:
            break
    return best


def measure_matmul_flops(dtype: str) -> float:
    """Peak FLOP/s of an n x n matmul at ``dtype`` on this CPU with the current thread count."""
    n = 2048 if dtype == "fp32" else 1024
    a = torch.randn(n, n).to(TORCH_DTYPES[dtype])
    b = torch.randn(n, n).to(TORCH_DTYPES[dtype])
    return 2.0 * n**3 / _best_time(lambda: torch.mm(a, b))


def measure_copy_bandwidth() -> float:
    """DRAM bandwidth in bytes/s from copying a 256 MiB fp32 tensor (read + write)."""
    src = torch.ones(64 * 2**20)
    dst = torch.empty_like(src)
    return 2.0 * src.numel() * 4 / _best_time(lambda: dst.copy_(src))


_MEASURED: dict[str, float] = {}  #: this process's calibrations, by cache key


def _cached(kind: str, measure) -> float:
    """max(this process's measurement, the best cached for this machine); measures once per key."""
    key = _key(kind, torch.get_num_threads())
    if key in _MEASURED:
        return _MEASURED[key]
    path = cache_path()
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    value = max(measure(), float(cache.get(key, 0.0)))
    _MEASURED[key] = value
    cache[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    tmp.replace(path)
    return value


def peak_flops(precision_compute_dtype: str) -> float:
    """Calibrated (cached) peak FLOP/s for arithmetic in ``precision_compute_dtype``."""
    return _cached(f"matmul_{precision_compute_dtype}", lambda: measure_matmul_flops(precision_compute_dtype))


def dram_bandwidth() -> float:
    """Calibrated (cached) DRAM bandwidth in bytes/s."""
    return _cached("copy_bandwidth", measure_copy_bandwidth)
