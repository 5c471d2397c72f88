"""Calibrate this machine's CPU ceilings: ``python -m dabench calibrate [--recalibrate]``.

Prints each calibration (key, median, spread, load) or why it was refused; exit 0 when every
requested calibration is available, 3 when any was refused. Method: docs/metrics.md.
"""

from __future__ import annotations

from dabench.cli.frame import arg, command, flag
from dabench.config.fields import CHOICE, INT, LIST, Spec
from dabench.host.info import cpu_native_precision

PRECISIONS = ("fp32", "bf16", "fp16")


@command(
    "calibrate",
    __doc__.splitlines()[0],
    {
        "--recalibrate": flag("measure again even where a calibration is cached"),
        "--precision": arg(LIST, "precisions to calibrate", PRECISIONS, item=Spec(CHOICE, choices=PRECISIONS)),
        "--threads": arg(INT, "torch threads (default: torch's)", low=1, high=4096),
    },
    writes={"calibration_cache": True},
)
def main(args) -> int:
    import torch

    from dabench.host import calibrate

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    print(
        f"load average {calibrate.load_per_core():.2f} per core (limit {calibrate.max_load_per_core()}); "
        f"cache {calibrate.calibration_cache()}"
    )
    refused = 0
    gemms = [(f"gemm_{p}", p, lambda p=p: calibrate.matmul_samples(p)) for p in args.precision]
    for kind, precision, measure in [*gemms, ("copy", None, calibrate.copy_samples)]:
        native = "" if precision is None else f" native={'yes' if cpu_native_precision(precision) else 'NO (emulated)'}"
        try:
            cal = calibrate.calibrate(kind, measure, recalibrate=args.recalibrate)
        except calibrate.CalibrationRefused as error:
            refused += 1
            print(f"REFUSED {error.key}: {error.reason}")
        else:
            print(
                f"{cal.key}: {cal.value / 1e9:,.1f} {'GB/s' if kind == 'copy' else 'GFLOP/s'} "
                f"(median of {len(cal.samples)}, fastest "
                f"{cal.fastest / 1e9:,.1f}, spread {cal.spread:.1%}{' NOISY' if cal.noisy else ''}, "
                f"load {cal.load_per_core:.2f}/core, {cal.measured_at}){native}"
            )
    return 3 if refused else 0
