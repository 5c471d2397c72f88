"""CPU ceilings by calibration: CPUs differ, so their peak FLOP/s and DRAM bandwidth are measured.

A calibration (peak FLOP/s per precision by a matrix product, bandwidth by a copy) is the median of
at least :data:`MIN_REPEATS` timed repeats, refused (:class:`CalibrationRefused`) when the load per
core exceeds :data:`MAX_LOAD_PER_CORE` or the repeats spread more than :data:`MAX_SPREAD`; both
readings can be injected (``load_per_core=``, ``samples=``). Accepted calibrations are cached under
:func:`calibration_key`; ``recalibrate=True`` replaces an entry only when accepted. :func:`probe`
measures the same ceilings in situ for validate mode and is never cached.

Details: docs/metrics.md, "Tier 1" (compute efficiency) and "Validation".
"""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from dabench.host.info import cpu_calibration_key

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
MIN_REPEATS = 5  #: timed repeats per calibration (the median is kept)
MAX_LOAD_PER_CORE = 0.5  #: 1-minute load average per core above which calibration is refused
MAX_SPREAD = 0.10  #: (max - min) / median of the repeats above which it is refused
PROBE_REPEATS = 3  #: timed repeats of each in-situ probe (the median is kept)


class CalibrationRefused(RuntimeError):
    """The machine was too busy for a calibration to mean anything; ``reason`` says why."""

    def __init__(self, key: str, reason: str):
        super().__init__(f"CPU calibration refused for {key}: {reason}")
        self.key, self.reason = key, reason


@dataclass(frozen=True)
class Calibration:
    """One accepted calibration: the median ``value`` (FLOP/s or bytes/s) of ``samples``."""

    key: str
    value: float
    samples: tuple[float, ...]
    spread: float
    load_per_core: float
    measured_at: str


def cache_path() -> Path:
    folder = Path(os.environ.get("DABENCH_CACHE_DIR", Path.home() / ".cache" / "dabench"))
    return folder / "calibration.json"


def calibration_key(kind: str, threads: int | None = None) -> str:
    """'<cpu model>|threads=<n>|torch=<version>|<kind>', kind 'gemm_<precision>' or 'copy'."""
    return cpu_calibration_key(kind, torch.get_num_threads() if threads is None else threads, torch.__version__)


def load_per_core() -> float:
    """The 1-minute load average divided by the number of logical CPUs."""
    return os.getloadavg()[0] / (os.cpu_count() or 1)


def spread(samples: Sequence[float]) -> float:
    """(max - min) / median of the repeats: 0 on an undisturbed machine."""
    return (max(samples) - min(samples)) / statistics.median(samples)


def accept(key: str, samples: Sequence[float], load: float) -> Calibration:
    """The Calibration of rate ``samples`` (one per repeat) taken at ``load`` per core, or
    CalibrationRefused naming the rule that failed. Pure: no measurement, no I/O."""
    if load > MAX_LOAD_PER_CORE:
        raise CalibrationRefused(
            key,
            f"machine busy: load average {load:.2f} per core > {MAX_LOAD_PER_CORE} "
            f"(run `python -m dabench calibrate` when it is quiet)",
        )
    if len(samples) < MIN_REPEATS:
        raise CalibrationRefused(key, f"{len(samples)} repeats, at least {MIN_REPEATS} are needed")
    s = spread(samples)
    if s > MAX_SPREAD:
        raise CalibrationRefused(
            key,
            f"repeats spread {s:.0%} > {MAX_SPREAD:.0%} (min {min(samples):.4g}, "
            f"max {max(samples):.4g}): the machine is disturbed",
        )
    return Calibration(
        key,
        float(statistics.median(samples)),
        tuple(float(x) for x in samples),
        s,
        load,
        time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )


def _rates(fn: Callable[[], object], work: float, repeats: int) -> list[float]:
    """``work`` / seconds for ``repeats`` timed calls of ``fn`` after one warm-up call."""
    fn()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(work / (time.perf_counter() - start))
    return out


def matmul_samples(dtype: str, repeats: int = MIN_REPEATS + 2) -> list[float]:
    """FLOP/s of repeated n x n matrix products at ``dtype`` with the current thread count, by the
    faster of torch's two CPU GEMM paths: ``torch.mm`` and ``F.linear`` (nn.Linear's, the
    model's weight matmuls). They differ by 20x on a CPU without native 16-bit arithmetic: on an
    AVX2-only AMD EPYC with torch 2.13, 1024^3 in bf16 ran at 0.9 GFLOP/s through ``torch.mm``
    and 19 through ``F.linear`` (oneDNN), and a roof from the slow path put the model's own
    matmuls 5x above it. The faster path is picked by one timed call of each (after a warm-up),
    then timed ``repeats`` times."""
    n = 2048 if dtype == "fp32" else 1024
    a = torch.randn(n, n).to(TORCH_DTYPES[dtype])
    b = torch.randn(n, n).to(TORCH_DTYPES[dtype])
    paths = [lambda: torch.mm(a, b), lambda: torch.nn.functional.linear(a, b)]  # linear: a @ b.T, same work
    fastest = max(paths, key=lambda fn: _rates(fn, 1.0, 1)[0])
    return _rates(fastest, 2.0 * n**3, repeats)


def copy_samples(repeats: int = MIN_REPEATS + 2) -> list[float]:
    """Bytes/s (read + write) of repeated copies of a 256 MiB fp32 tensor."""
    src = torch.ones(64 * 2**20)
    dst = torch.empty_like(src)
    return _rates(lambda: dst.copy_(src), 2.0 * src.numel() * 4, repeats)


def _read_cache() -> dict:
    try:
        data = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}
    # entries of older formats (a bare best-ever float) are not calibrations: drop them
    return {k: v for k, v in data.items() if isinstance(v, dict) and "value" in v}


def _write_cache(cal: Calibration) -> None:
    path = cache_path()
    cache = _read_cache()
    cache[cal.key] = asdict(cal)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    tmp.replace(path)


_PROCESS: dict[str, Calibration] = {}  #: this process's calibrations, by key


def recalibrate_requested() -> bool:
    return os.environ.get("DABENCH_RECALIBRATE", "").lower() in ("1", "true", "yes")


def calibrate(
    kind: str, measure: Callable[[], Sequence[float]], *, recalibrate: bool | None = None, load: float | None = None
) -> Calibration:
    """The calibration for ``kind`` on this machine: this process's, else the cached one for the
    exact key, else (or with ``recalibrate``) measured now, accepted or refused, and cached.
    ``load`` injects the load reading (default: :func:`load_per_core`)."""
    key = calibration_key(kind)
    if recalibrate is None:  # DABENCH_RECALIBRATE: once per process, not at every call of a run or sweep
        recalibrate = recalibrate_requested() and key not in _PROCESS
    if not recalibrate:
        if key in _PROCESS:
            return _PROCESS[key]
        entry = _read_cache().get(key)
        if entry is not None:
            cal = Calibration(
                key,
                float(entry["value"]),
                tuple(entry.get("samples", ())),
                float(entry.get("spread", 0.0)),
                float(entry.get("load_per_core", 0.0)),
                str(entry.get("measured_at", "")),
            )
            _PROCESS[key] = cal
            return cal
    reading = load_per_core() if load is None else load
    if reading > MAX_LOAD_PER_CORE:  # refuse before spending the time
        accept(key, [], reading)
    cal = accept(key, list(measure()), reading)
    _PROCESS[key] = cal
    _write_cache(cal)
    return cal


def peak_flops(precision_compute_dtype: str, **kwargs) -> float:
    """Calibrated peak FLOP/s for arithmetic in ``precision_compute_dtype`` (raises
    CalibrationRefused when it cannot be calibrated now and none is cached)."""
    return calibrate(f"gemm_{precision_compute_dtype}", lambda: matmul_samples(precision_compute_dtype), **kwargs).value


def dram_bandwidth(**kwargs) -> float:
    """Calibrated DRAM bandwidth in bytes/s (raises CalibrationRefused like :func:`peak_flops`)."""
    return calibrate("copy", copy_samples, **kwargs).value


@dataclass(frozen=True)
class Probe:
    """The ceilings measured in situ at one moment: median of :data:`PROBE_REPEATS` repeats."""

    peak_flops: float  #: FLOP/s of the calibration's matmul at the probed dtype
    bandwidth_Bps: float  #: bytes/s (read + write) of the calibration's copy


def probe(dtype: str, repeats: int = PROBE_REPEATS) -> Probe:
    """Measure the two CPU ceilings now, with the current thread count (never cached, never
    refused: a probe describes the machine as it is, busy or not)."""
    return Probe(
        float(statistics.median(matmul_samples(dtype, repeats))), float(statistics.median(copy_samples(repeats)))
    )


def combine_probes(before: Probe, after: Probe) -> tuple[Probe, float]:
    """The ceilings during a run bracketed by two probes: their means; and the drift of the peak,
    (after - before) / mean, a measure of how steady the machine was during the run."""
    peak = (before.peak_flops + after.peak_flops) / 2
    bandwidth = (before.bandwidth_Bps + after.bandwidth_Bps) / 2
    return Probe(peak, bandwidth), (after.peak_flops - before.peak_flops) / peak
