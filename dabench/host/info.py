"""What this machine's CPU is: model name, feature flags, native arithmetic per precision, and the
calibration's cache key. torch-free."""

from __future__ import annotations

import functools
import platform
import re
import sys

from dabench.core.readers import text_or_empty

#: /proc/cpuinfo flags (x86) or Features (arm64) that mean native arithmetic at a precision
NATIVE_FLAGS = {"bf16": ("avx512_bf16", "amx_bf16", "bf16"), "fp16": ("avx512_fp16", "amx_fp16", "fphp")}


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> str:
    return text_or_empty("/proc/cpuinfo")


def _cpuinfo_value(*names: str) -> str | None:
    """The value of the first /proc/cpuinfo line that starts with one of ``names`` (None: no such line)."""
    return next((line.split(":", 1)[1] for line in _cpuinfo().splitlines() if line.startswith(names)), None)


def meminfo_bytes(name: str, meminfo: str = "/proc/meminfo") -> int | None:
    """Field ``name`` of /proc/meminfo (``MemTotal``: this machine's RAM; ``MemAvailable``) in bytes;
    None when unknown."""
    found = re.search(rf"^{name}:\s+(\d+)", text_or_empty(meminfo), re.MULTILINE)
    return int(found.group(1)) * 1024 if found else None


def cpu_model() -> str:
    found = _cpuinfo_value("model name")
    return found.strip() if found is not None else platform.processor() or platform.machine()


def cuda_device_name() -> str | None:
    """The name of GPU 0 when torch is already loaded, else None (torch is never imported here)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:  # a broken driver: the config's name still separates machines
        pass
    return None


def gpu_identity(torch) -> dict[str, str]:
    """The GPU side of a torch build, as run tags: ``gpu_vendor`` (AMD for a ROCm build, which keeps
    the torch.cuda API, else NVIDIA), ``gpu_runtime`` (``rocm <torch.version.hip>`` or ``cuda
    <torch.version.cuda>``) and, when a device is visible, device 0's ``gpu_name``. Reads only the
    module it is given (torch, or a stand-in)."""
    hip = getattr(torch.version, "hip", None)
    tags = {
        "gpu_vendor": "AMD" if hip else "NVIDIA",
        "gpu_runtime": f"rocm {hip}" if hip else f"cuda {torch.version.cuda}",
    }
    if torch.cuda.is_available():
        tags["gpu_name"] = torch.cuda.get_device_name(0)
    return tags


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (first processor's ``flags`` or ``Features`` line)."""
    return frozenset((_cpuinfo_value("flags", "Features") or "").split())


def cpu_native_precision(dtype: str, flags: frozenset[str] | None = None) -> bool:
    """Whether the CPU has native arithmetic for ``dtype`` (else torch emulates it through fp32)."""
    if dtype == "fp32":
        return True
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in NATIVE_FLAGS.get(dtype, ()))


def cpu_calibration_key(kind: str, threads: int, torch_version: str) -> str:
    """'<cpu model>|threads=<n>|torch=<version>|<kind>', kind 'gemm_<precision>' or 'copy'."""
    return f"{cpu_model()}|threads={threads}|torch={torch_version}|{kind}"
