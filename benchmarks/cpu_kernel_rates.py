"""CPU kernel rates the CPU model prices apart from its roofline: GELU, attention, fresh allocations.

Measures, on this machine, each against a large fp32 matmul (the calibration's peak) timed in the
same repeat, so that the machine's drift cancels in the ratio:

- ``gelu``: torch's tanh-approximation GELU forward and backward, as matmul-FLOP equivalents per
  element (peak FLOP/s x seconds per element): the CPU model's ``gelu_element_flops``.
- ``attention``: causal ``scaled_dot_product_attention`` forward and forward+backward over head
  widths and sequence lengths, as the share of the peak its counted FLOPs reach (the op graph's
  4 B S^2 H forward, twice that backward): the CPU model's ``attention_efficiency``.
- ``alloc``: an add into a fresh tensor against the same add into a preallocated one (64 KiB to
  64 MiB), with the minor page faults per call: the cost of first-touch pages (glibc hands large
  blocks out by mmap, docs/perfmodel.md, "CPU").

One thread and ``time.thread_time`` by default (CPU time: robust to other processes on a shared
machine); ``--threads N`` times wall clock at N threads. Each number is the median of
``--repeats`` interleaved repeats, with the quartiles. Writes nothing unless ``--json``.

    python benchmarks/cpu_kernel_rates.py [--threads 1] [--repeats 9] [--only gelu,attention,alloc] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dabench.runtime.quiet import install as quiet  # noqa: E402  (before torch loads)

quiet()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GELU_ELEMENTS = (2**18, 2**20, 2**22)  # 1, 4 and 16 MiB of fp32
#: (batch, heads, seq, head_dim): the validate grid's head widths (32, 64) and others
ATTENTION_SHAPES = (
    (1, 4, 128, 32),
    (16, 4, 128, 32),
    (4, 8, 128, 64),
    (16, 8, 128, 64),
    (8, 4, 256, 32),
    (16, 8, 64, 64),
    (4, 12, 256, 64),
    (2, 16, 512, 64),
)
ALLOC_BYTES = tuple(2**k for k in range(16, 27, 2))  # 64 KiB .. 64 MiB


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[0], statistics.median(values), q[2]


def fmt(values: list[float], digits: int = 3) -> str:
    lo, mid, hi = quartiles(values)
    return f"{mid:.{digits}g} [{lo:.{digits}g}, {hi:.{digits}g}]"


class Timer:
    """Seconds per call of ``fn`` (enough calls to fill ``min_s``), on the chosen clock."""

    def __init__(self, wall: bool, min_s: float = 0.02):
        self.clock = time.perf_counter if wall else time.thread_time
        self.min_s = min_s

    def __call__(self, fn) -> float:
        calls, elapsed = 1, 0.0
        while True:
            start = self.clock()
            for _ in range(calls):
                fn()
            elapsed = self.clock() - start
            if elapsed >= self.min_s:
                return elapsed / calls
            calls *= 2


def peak_probe(timer: Timer):
    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    return lambda: 2.0 * n**3 / timer(lambda: torch.mm(a, b))


def gelu(timer: Timer, repeats: int, peak) -> dict:
    out = {}
    for n in GELU_ELEMENTS:
        x, g = torch.randn(n), torch.randn(n)
        fwd = lambda x=x: F.gelu(x, approximate="tanh")  # noqa: E731
        bwd = lambda x=x, g=g: torch.ops.aten.gelu_backward(g, x, approximate="tanh")  # noqa: E731
        fwd(), bwd()
        rows = {"fwd": [], "bwd": []}
        for _ in range(repeats):
            p = peak()
            rows["fwd"].append(p * timer(fwd) / n)
            rows["bwd"].append(p * timer(bwd) / n)
        out[n] = rows
        print(
            f"gelu {n * 4 / 2**20:5.1f} MiB: matmul-FLOP equivalents per element forward {fmt(rows['fwd'])}, "
            f"backward {fmt(rows['bwd'])}",
            flush=True,
        )
    return out


def sdpa_calls(batch: int, heads: int, seq: int, dim: int):
    """Causal SDPA forward (no grad) and forward + backward on random (batch, heads, seq, dim) inputs."""
    q, k, v = (torch.randn(batch, heads, seq, dim, requires_grad=True) for _ in range(3))
    grad = torch.randn(batch, heads, seq, dim)

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def both():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(grad)
        q.grad = k.grad = v.grad = None

    return fwd, both


def attention(timer: Timer, repeats: int, peak) -> dict:
    out = {}
    for batch, heads, seq, dim in ATTENTION_SHAPES:
        flops_fwd = 4.0 * batch * seq * seq * heads * dim
        fwd, both = sdpa_calls(batch, heads, seq, dim)
        fwd(), both()
        rows = {"fwd": [], "train": []}
        for _ in range(repeats):
            p = peak()
            rows["fwd"].append(flops_fwd / timer(fwd) / p)
            rows["train"].append(3 * flops_fwd / timer(both) / p)
        out[f"{batch}x{heads}x{seq}x{dim}"] = rows
        print(
            f"attention b{batch} heads {heads} seq {seq} head_dim {dim}: share of the matmul peak forward "
            f"{fmt(rows['fwd'])}, forward+backward {fmt(rows['train'])}",
            flush=True,
        )
    return out


def alloc(timer: Timer, repeats: int) -> dict:
    out = {}
    for nbytes in ALLOC_BYTES:
        n = nbytes // 4
        a, b, c = torch.randn(n), torch.randn(n), torch.empty(n)
        fresh = lambda a=a, b=b: a + b  # noqa: E731
        into = lambda a=a, b=b, c=c: torch.add(a, b, out=c)  # noqa: E731
        fresh(), into()
        ratios, faults = [], []
        for _ in range(repeats):
            t_into = timer(into)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t_fresh = timer(fresh)
            calls = max(1, round(timer.min_s / max(t_fresh, 1e-9)))
            after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            ratios.append(t_fresh / t_into)
            faults.append((after - before) / calls)
        out[nbytes] = {"fresh_over_preallocated": ratios, "minor_faults_per_call": faults}
        print(
            f"alloc {nbytes / 2**20:7.3f} MiB: fresh / preallocated time {fmt(ratios)}, "
            f"minor faults per fresh call ~{statistics.median(faults):.0f} (a page is 4 KiB)",
            flush=True,
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--only", default="gelu,attention,alloc")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    timer = Timer(wall=args.threads > 1)
    peak = peak_probe(timer)
    print(
        f"{args.threads} thread(s), {'wall clock' if args.threads > 1 else 'CPU time'}; load average "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; median [quartiles] of {args.repeats} repeats; "
        f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}",
        flush=True,
    )
    result = {"threads": args.threads, "load": os.getloadavg()[0], "torch": torch.__version__}
    only = set(args.only.split(","))
    if "gelu" in only:
        result["gelu"] = gelu(timer, args.repeats, peak)
    if "attention" in only:
        result["attention"] = attention(timer, args.repeats, peak)
    if "alloc" in only:
        result["alloc"] = alloc(timer, args.repeats)
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
