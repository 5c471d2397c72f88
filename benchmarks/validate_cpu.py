"""CPU prediction error: validate mode (measure and predict the same run) over a grid.

Grid: layers {2, 4, 8} x hidden {128, 256, 512} x batch {1, 4, 16}, fp32, the tiny model's
other settings (seq 128, vocab 1024, 4 heads; 8 heads from hidden 512). For each point it prints
measured and predicted samples/s and the relative error (predicted - measured) / measured, and
the machine's 1-minute load average before and after. Goal: median |error| <= 12%, max <= 30%,
every point giving a result.

A measurement taken while other processes fill the cores says nothing about the model, so the
script refuses to measure when the load is above ``--max-load-per-core`` (1.0, the calibration's
limit, which it also sets for the runs through ``DABENCH_MAX_LOAD_PER_CORE``) per core, says so
and exits 3; ``--force`` measures anyway and labels the table.

A virtual machine's cores also change speed with no load showing inside it (other tenants of the
host). Validate mode therefore predicts each point at the ceilings probed right before and after
its timed steps (dabench/host/calibrate.py, in-situ probes), and the ceilings carry a band as wide
as the calibration's and probes' repeats spread (dabench/host/noise.py); the table shows the
probed peak, its drift (after vs before) and the band. A point whose peak drifted more than
``--max-drift`` (10%) during its run is measured again (up to ``--retries`` more times) and, if it
never holds still, counted as unsteady, with its band: widened, not dropped. So is a point whose
probes agree with each other but sit more than ``--max-gap`` (30%) off the run's roof (the fastest
of the cached calibration and the probes, dabench/host/ceilings.py): on the 2-core EPYC VM a
process's first seconds can run the 2048^3 matmul at one core's rate (63 vs 130 GFLOP/s), and a
point's two probes both fell into such a spell while its timed steps did not (-44% error at
probes of 64.5 GFLOP/s). A point that ends
with another status than ok (refused, invalid_result) is listed and makes the exit status 1.

The last line always reads ``median_abs_error=<fraction> max_abs_error=<fraction>`` (``nan`` when
nothing was measured).

    python benchmarks/validate_cpu.py [--json out.json] [--ship] [--force] [--quick | --points N] [--threads T]
        [--batch B ...] [--layers L ...] [--hidden H ...]   (a subset of the 27-point grid)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dabench.runtime.quiet import install as quiet  # noqa: E402  (before torch loads: libkineto's USDT lines off)

quiet()

LAYERS, HIDDEN, BATCH = (2, 4, 8), (128, 256, 512), (1, 4, 16)


def load_per_core() -> float:
    return os.getloadavg()[0] / (os.cpu_count() or 1)


def grid(quick: bool, points: int | None = None, layers=LAYERS, hidden=HIDDEN, batch=BATCH):
    """The 27-point grid (or its ``layers`` x ``hidden`` x ``batch`` subset); ``quick``: 3 points;
    ``points``: that many spread evenly over it."""
    if quick:
        return [(2, 128, 4), (4, 256, 16), (8, 512, 1)]
    full = list(itertools.product(layers, hidden, batch))
    if points is None or points >= len(full):
        return full
    return [full[round(i * (len(full) - 1) / max(points - 1, 1))] for i in range(points)]


def overrides(layers: int, hidden: int, batch: int, threads: int | None = None) -> list[str]:
    heads = 8 if hidden >= 512 else 4
    return ([f"run.threads={threads}"] if threads else []) + [
        "hardware.mode=validate",
        "precision=fp32",
        f"model.n_layers={layers}",
        f"model.hidden_size={hidden}",
        f"model.n_heads={heads}",
        f"run.batch_size={batch}",
        "run.warmup_steps=3",
        "run.timed_steps=7",
        "tracking.enabled=false",
    ]


def probe_gap(result) -> float:
    """Probed peak / the run's roof peak (the calibration's or a probe's, the faster) - 1 (0 when either is missing)."""
    probed = result.metrics.get("validate.probed_peak_flops") if result.metrics else None
    calibrated = result.ceilings.peak_flops if result.ceilings is not None else None
    if not probed or not calibrated or math.isnan(calibrated):
        return 0.0
    return probed / calibrated - 1.0


def compose(ov: list[str]) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = hydra_compose("config", overrides=ov)
    return OmegaConf.to_container(cfg, resolve=True)


def ship_text(head: dict, points: list[dict]) -> str:
    """The shipped grid as JSON, one point per line (a reviewable diff when it is measured again)."""
    rows = ",\n".join("  " + json.dumps(p, sort_keys=True) for p in points)
    return json.dumps(head, indent=1, sort_keys=True)[:-2] + ',\n "points": [\n' + rows + "\n ]\n}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write every point's measured and predicted numbers here")
    ap.add_argument(
        "--ship", action="store_true", help="write the ok points' errors as the CPU band's evidence (platforms/cpu)"
    )
    ap.add_argument("--force", action="store_true", help="measure even when the machine is busy (labelled)")
    ap.add_argument("--quick", action="store_true", help="3 points instead of 27")
    ap.add_argument("--points", type=int, default=None, help="this many points spread evenly over the 27")
    ap.add_argument("--threads", type=int, default=None, help="torch threads per run (default: torch's)")
    ap.add_argument("--batch", type=int, nargs="+", default=BATCH, help=f"batch sizes of the grid (default {BATCH})")
    ap.add_argument("--layers", type=int, nargs="+", default=LAYERS, help=f"layer counts (default {LAYERS})")
    ap.add_argument("--hidden", type=int, nargs="+", default=HIDDEN, help=f"hidden sizes (default {HIDDEN})")
    ap.add_argument("--max-load-per-core", type=float, default=1.0)
    ap.add_argument(
        "--max-drift",
        type=float,
        default=0.10,
        help="largest |drift| of the probed peak during a point's run for it to count (default 0.10)",
    )
    ap.add_argument(
        "--max-gap",
        type=float,
        default=0.30,
        help="largest |probed / roof peak - 1| for a point to count without measuring again (default 0.30)",
    )
    ap.add_argument("--retries", type=int, default=2, help="measurements again of a point whose machine drifted")
    args = ap.parse_args(argv)

    cores = os.cpu_count() or 1
    start_load = load_per_core()
    print(f"machine: {cores} cores, load average {os.getloadavg()[0]:.2f} ({start_load:.2f} per core)")
    if start_load > args.max_load_per_core and not args.force:
        print(
            f"load {start_load:.2f} per core is above {args.max_load_per_core}: too busy to measure; "
            f"nothing measured (rerun on a quiet machine, or --force for labelled numbers)"
        )
        print("median_abs_error=nan max_abs_error=nan")
        return 3
    busy = start_load > args.max_load_per_core
    # the calibration's own load limit follows the script's (raised with --force: labelled)
    os.environ["DABENCH_MAX_LOAD_PER_CORE"] = str(64.0 if args.force else args.max_load_per_core)

    from dabench.config.build import build_run_config
    from dabench.host import validation
    from dabench.perfmodel.constants import model_version, validate_point
    from dabench.pipeline.execute import execute

    rows, errors, unsteady, failed, shipped = [], [], 0, 0, []
    print(
        f"{'layers':>6} {'hidden':>6} {'batch':>5} {'measured/s':>11} {'predicted/s':>11} {'error':>8} "
        f"{'load':>5} {'peak GF/s':>9} {'drift':>6} {'band':>6}"
    )
    for layers, hidden, batch in grid(args.quick, args.points, args.layers, args.hidden, args.batch):
        for attempt in range(args.retries + 1):
            rc = build_run_config(compose(overrides(layers, hidden, batch, args.threads)))
            result = execute(rc)
            drift = result.metrics.get("validate.ceilings_drift", 0.0) if result.metrics else 0.0
            gap = probe_gap(result)
            steady = abs(drift) <= args.max_drift and abs(gap) <= args.max_gap
            if result.status.value != "ok" or steady or attempt == args.retries:
                break
            print(
                f"{layers:>6} {hidden:>6} {batch:>5} the machine's peak drifted {drift:+.0%} during the run, probes "
                f"{gap:+.0%} off the calibration: measuring again ({attempt + 1}/{args.retries})"
            )
        load = os.getloadavg()[0]
        if result.status.value != "ok" or result.predicted is None:
            failed += 1
            print(f"{layers:>6} {hidden:>6} {batch:>5} {result.status.value}: {result.reason[:120]}")
            rows.append(
                {
                    "layers": layers,
                    "hidden": hidden,
                    "batch": batch,
                    "status": result.status.value,
                    "reason": result.reason[:500],
                }
            )
            continue
        shipped.append(validate_point(rc, result.metrics))
        measured = result.metrics["throughput.samples_per_s"]
        predicted = result.metrics["predict.throughput.samples_per_s"]
        error = (predicted - measured) / measured
        peak = result.metrics.get("validate.probed_peak_flops", result.ceilings.peak_flops)
        band = result.metrics.get("ceilings.band_width", 0.0)
        errors.append(error)
        unsteady += not steady
        print(
            f"{layers:>6} {hidden:>6} {batch:>5} {measured:>11.2f} {predicted:>11.2f} {error:>+8.1%} {load:>5.2f} "
            f"{peak / 1e9:>9.1f} {drift:>+6.1%} {band:>6.1%}" + ("" if steady else "  unsteady: counted, band widened")
        )
        rows.append(
            {
                "layers": layers,
                "hidden": hidden,
                "batch": batch,
                "status": "ok" if steady else "unsteady",
                "load": load,
                "drift": drift,
                "band_width": band,
                "noise": result.notes.get("dabench.ceilings_noise", ""),
                "probed_peak_flops": peak,
                "error": error,
                "measured_step_s": result.profile.median_step_s,
                "predicted_step_s": result.predicted.median_step_s,
                "measured_classes": result.profile.class_times_s,
                "predicted_classes": result.predicted.class_times_s,
                "measured_subtasks": {s.name: s.time_s for s in result.profile.subtasks},
                "predicted_subtasks": {s.name: s.time_s for s in result.predicted.subtasks},
                "ceilings": [result.ceilings.peak_flops, result.ceilings.bandwidth_Bps, result.ceilings.source],
            }
        )
    end_load = load_per_core()
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"start_load_per_core": start_load, "end_load_per_core": end_load, "time": time.time(), "rows": rows},
                indent=1,
            )
        )
    if args.ship and not busy:
        ship = {
            "machine": validation.machine(),
            "model": model_version("cpu"),
            "measured": time.strftime("%Y-%m-%d"),
            "command": "python benchmarks/validate_cpu.py " + " ".join(argv or sys.argv[1:]),
        }
        validation.SHIPPED.write_text(ship_text(ship, shipped))
        print(f"{len(shipped)} errors written to {validation.SHIPPED}")
    elif args.ship:
        print(f"{validation.SHIPPED} not written: the machine was busy (errors measured beside other work)")
    label = " (MACHINE BUSY: measured anyway with --force; not a valid check of the model)" if busy else ""
    print(f"load average at end {os.getloadavg()[0]:.2f} ({end_load:.2f} per core){label}")
    if not errors:
        print("median_abs_error=nan max_abs_error=nan")
        return 1
    absolute = [abs(e) for e in errors]
    print(
        f"points {len(errors)} of {len(rows)} ({unsteady} unsteady, counted with their band; {failed} without a "
        f"result), median error {statistics.median(errors):+.1%}; goal: median |error| <= 12%, max <= 30%"
    )
    print(f"median_abs_error={statistics.median(absolute):.4f} max_abs_error={max(absolute):.4f}")
    return 0 if not failed and not math.isnan(statistics.median(absolute)) else 1


if __name__ == "__main__":
    sys.exit(main())
