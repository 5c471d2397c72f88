"""CPU ceilings by calibration: peak FLOP/s per precision (a matrix product) and DRAM bandwidth (a
copy), measured in timed repeats, refused (:class:`CalibrationRefused`) on a busy or disturbed
machine, marked noisy when the repeats spread, and cached per :func:`calibration_key`;
:func:`probe` measures the same ceilings in situ, never cached. docs/metrics.md, "Tier 1"."""

from __future__ import annotations

import logging
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import torch

from dabench.core.readers import DamagedFile
from dabench.host import conditions
from dabench.host.cache import CalibrationCache, calibration_cache
from dabench.host.info import cpu_calibration_key
from dabench.host.noise import NOISY_SPREAD
from dabench.runtime.interrupts import in_worker

log = logging.getLogger(__name__)
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
MIN_REPEATS = 5  #: timed repeats per calibration (the median is kept)
MAX_LOAD_PER_CORE = 1.0  #: default 1-minute load average per core above which calibration is refused
LOAD_ENV = "DABENCH_MAX_LOAD_PER_CORE"  #: environment variable that overrides MAX_LOAD_PER_CORE
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

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    @property
    def fastest(self) -> float:
        """The fastest repeat (the median when no repeats were kept)."""
        return max(self.samples) if self.samples else self.value


def calibration_key(kind: str, threads: int | None = None) -> str:
    """'<cpu model>|threads=<n>|torch=<version>|<kind>', kind 'gemm_<precision>' or 'copy'."""
    return cpu_calibration_key(kind, torch.get_num_threads() if threads is None else threads, torch.__version__)


def load_per_core() -> float:
    return os.getloadavg()[0] / (os.cpu_count() or 1)


def max_load_per_core() -> float:
    """``DABENCH_MAX_LOAD_PER_CORE`` when set (a number in (0, 64]), else :data:`MAX_LOAD_PER_CORE`."""
    text = os.environ.get(LOAD_ENV, "").strip()
    try:
        limit = float(text or MAX_LOAD_PER_CORE)
    except ValueError:
        limit = math.nan  # refused below, as a number out of range is
    if not 0 < limit <= 64:
        raise ValueError(f"{LOAD_ENV}={text!r}: must be a number in (0, 64]")
    return limit


def accept(key: str, samples: Sequence[float], load: float, limit: float = MAX_LOAD_PER_CORE) -> Calibration:
    """The Calibration of rate ``samples`` taken at ``load`` per core, or CalibrationRefused naming
    the rule that failed (load above ``limit``, too few repeats). Pure."""
    if load > limit:
        raise CalibrationRefused(
            key,
            f"machine busy: load average {load:.2f} per core > {limit} "
            f"(run `python -m dabench calibrate` when it is quieter; {LOAD_ENV} sets the limit)",
        )
    if len(samples) < MIN_REPEATS:
        raise CalibrationRefused(key, f"{len(samples)} repeats, at least {MIN_REPEATS} are needed")
    values = tuple(float(x) for x in samples)
    return Calibration(
        key,
        float(statistics.median(values)),
        values,
        conditions.spread(values),
        load,
        time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )


def measured_steadily(key: str, measure: Callable[[], Sequence[float]]) -> list[float]:
    """``measure()``'s repeats, or CalibrationRefused when the window was disturbed (conditions.judge)."""
    before = conditions.sample()
    samples = list(measure())
    window = conditions.window(before, conditions.sample(), torch.get_num_threads(), conditions.allowed_cpus(), ())
    disturbed = conditions.judge(window)
    if disturbed is not None:
        raise CalibrationRefused(key, f"disturbed while measured: {disturbed}")
    return samples


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
    """FLOP/s of repeated n x n matrix products at ``dtype`` by the faster of ``torch.mm`` and
    ``F.linear`` (picked by one timed call of each; docs/metrics.md, "Tier 1")."""
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
    """The cache's calibrations; a damaged file or entry is named in one warning line and not used."""
    try:
        entries, problems = CalibrationCache().read()
    except FileNotFoundError:
        return {}
    except DamagedFile as error:
        entries, problems = {}, [str(error)]
    for problem in set(problems) - _REPORTED:
        log.warning("calibration cache entry not used: %s (measured again)", problem)
        _REPORTED.add(problem)
    return entries


_REPORTED: set[str] = set()  #: damage already reported by this process


def _from_entry(key: str, entry: dict) -> Calibration:
    return Calibration(
        key,
        float(entry["value"]),
        tuple(float(x) for x in entry.get("samples", ())),
        float(entry.get("spread", 0.0)),
        float(entry.get("load_per_core", 0.0)),
        str(entry.get("measured_at", "")),
    )


_PROCESS: dict[tuple[str, str], Calibration] = {}  #: this process's calibrations, by (cache file, key)


def calibrate(
    kind: str, measure: Callable[[], Sequence[float]], *, recalibrate: bool | None = None, load: float | None = None
) -> Calibration:
    """The calibration for ``kind``: this process's, else the cached one, else (or with
    ``recalibrate``) measured now and cached; a noisy cached one is measured again once and the
    steadier kept. ``load`` injects the load reading."""
    key = calibration_key(kind)
    held = (str(calibration_cache()), key)
    if held in _PROCESS and not recalibrate:
        return _PROCESS[held]
    if recalibrate is None:
        recalibrate = os.environ.get("DABENCH_RECALIBRATE", "").lower() in ("1", "true", "yes")
    entry = _read_cache().get(key)
    cached = None if entry is None else _from_entry(key, entry)
    if cached is not None and not recalibrate and not cached.noisy:
        _PROCESS[held] = cached
        return cached
    reading = load_per_core() if load is None else load
    limit = max_load_per_core()
    try:
        if reading > limit:
            accept(key, [], reading, limit)
        cal = accept(key, in_worker(lambda: measured_steadily(key, measure), "dabench-calibrate"), reading, limit)
    except CalibrationRefused:
        if cached is None or recalibrate:
            raise
        cal = cached
    if cached is not None and cached.spread <= cal.spread and (not recalibrate or (cal.noisy and not cached.noisy)):
        cal = cached
    _PROCESS[held] = cal
    if cal is not cached:
        try:
            CalibrationCache().update(cal.key, asdict(cal))
        except OSError as error:
            log.warning("calibration not cached: %s", error)
    return cal


def calibration(kind: str) -> Calibration | None:
    """This process's calibration for ``kind`` ('gemm_<dtype>' or 'copy'), if any."""
    return _PROCESS.get((str(calibration_cache()), calibration_key(kind)))


def peak_flops(precision_compute_dtype: str, **kwargs) -> float:
    """Calibrated peak FLOP/s at ``precision_compute_dtype`` (or CalibrationRefused)."""
    return calibrate(f"gemm_{precision_compute_dtype}", lambda: matmul_samples(precision_compute_dtype), **kwargs).value


def dram_bandwidth(**kwargs) -> float:
    """Calibrated DRAM bandwidth in bytes/s (or CalibrationRefused)."""
    return calibrate("copy", copy_samples, **kwargs).value


@dataclass(frozen=True)
class Probe:
    """The ceilings measured in situ at one moment: median of :data:`PROBE_REPEATS` repeats."""

    peak_flops: float  #: FLOP/s of the calibration's matmul at the probed dtype
    bandwidth_Bps: float  #: bytes/s (read + write) of the calibration's copy
    peak_samples: tuple[float, ...] = ()  #: the matmul's repeats (FLOP/s)
    bandwidth_samples: tuple[float, ...] = ()  #: the copy's repeats (bytes/s)


def probe(dtype: str, repeats: int = PROBE_REPEATS) -> Probe:
    """Measure the two CPU ceilings now (never cached, never refused)."""
    peak = tuple(float(x) for x in matmul_samples(dtype, repeats))
    bandwidth = tuple(float(x) for x in copy_samples(repeats))
    return Probe(float(statistics.median(peak)), float(statistics.median(bandwidth)), peak, bandwidth)
