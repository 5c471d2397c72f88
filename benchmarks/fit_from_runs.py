"""Fit from your own runs, end to end on this machine, through the command line (docs/fitting.md).

1. Measure: a CPU grid of benchmarks/validate_cpu.py's shape (layers {2, 4, 8} x hidden {128, 256}
   x batch {1, 4}) in fp32 and in bf16 (emulated on a CPU without AVX512-BF16/AMX, where the
   shipped model is known to be optimistic): 24 configs, recorded with ``python -m dabench ... -m``
   in a fresh SQLite store, one torch thread, short steps (warm-up 1, timed 3, no per-layer steps).
   Half the configs (a checkerboard over layers x hidden, both batches and precisions) go to the
   experiment ``fit_half``, the other half to ``held_half``; 4 configs of the fit half are measured
   twice, for the noise floor (the median spread of repeated measurements).
2. Fit: ``python -m dabench fit --from-mlflow fit_half --name NAME`` (its per-platform output is
   printed as it comes).
3. Predict the held-back half twice with ``python -m dabench grid hardware.mode=predict``:
   ``hardware.constants=published`` and ``hardware.constants=NAME``, both on the same calibrated
   ceilings (this CPU's calibration cache, one thread, the same the measured runs used).
4. Compare each prediction with its measurement. The last line reads
   ``published_median_abs_error=<f> fitted_median_abs_error=<f> noise_floor=<f> points=<n>``
   (points: the measured runs the fit used). Goal: fitted at least 30% lower than published, or
   within 1.2x the noise floor where published already is.

Run it once, on a machine as quiet as you can get (it measures 28 runs: 10-25 minutes on the
loaded 2-core VM):

    python benchmarks/fit_from_runs.py [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
COMMON = ["run.threads=1", "run.warmup_steps=1", "run.timed_steps=3", "run.profile_subtasks=false", "run.plots=never"]
NAME = "fit_from_runs_bench"
#: hidden -> (layers of the fit half, layers of the held-back half): a checkerboard over layers x hidden
SPLIT = {128: ("2,8", "4"), 256: ("4", "2,8")}
REPEAT = ["model.n_layers=2", "model.hidden_size=128", "run.batch_size=1,4", "precision=fp32,bf16"]


def sh(args: list[str], cwd: Path, env: dict, echo: bool = False) -> str:
    started = time.time()
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.time() - started
    print(
        f"[{took:6.0f} s] {' '.join(a if ' ' not in a else repr(a) for a in args[2:])} -> exit {out.returncode}",
        flush=True,
    )
    if echo or out.returncode != 0:
        print(out.stdout.rstrip())
        if out.returncode != 0:
            print(out.stderr[-3000:].rstrip())
    return out.stdout


def runs(uri: str, experiment: str, mode: str) -> dict[tuple, float]:
    """(layers, hidden, batch, precision) -> samples/s of the experiment's ok runs of ``mode``."""
    from dabench.report.frame import load_frame

    frame, _ = load_frame(uri, experiment)
    out: dict[tuple, list[float]] = {}
    for _, row in frame.iterrows():
        if row.get("tags.dabench.mode") != mode or row.get("status") != "ok":
            continue
        key = (int(row["layers"]), int(row["hidden"]), int(row["batch"]), str(row["precision"]))
        out.setdefault(key, []).append(float(row["throughput"]))
    return {k: statistics.median(v) for k, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", help="where the store, the Hydra outputs and the set go (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    ap.add_argument("--skip-measure", action="store_true", help="reuse the measured runs already in --workdir's store")
    ap.add_argument(
        "--hardware",
        default="cpu",
        help="the measured target (cpu; cuda on a machine with a GPU: the same grid, bf16 native there)",
    )
    args = ap.parse_args(argv)
    global COMMON
    COMMON = [
        f"hardware={args.hardware}",
        *(COMMON if args.hardware == "cpu" else [c for c in COMMON if not c.startswith("run.threads")]),
    ]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="dabench_fit_from_runs_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{work / 'mlflow.db'}"
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": uri,
        "DABENCH_CONSTANTS_DIR": str(work / "constants"),
        "DABENCH_PROGRESS": "lines",
        "PYTHONPATH": str(ROOT),
    }
    print(
        f"store {uri}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (a shared machine: "
        f"the noise floor says how much)",
        flush=True,
    )
    started = time.time()

    # 1. measure (python -m dabench ... -m): 24 configs + 4 repeats
    for hidden in () if args.skip_measure else SPLIT:
        fit_layers, held_layers = SPLIT[hidden]
        for experiment, layers in (("fit_half", fit_layers), ("held_half", held_layers)):
            sh(
                [
                    PY,
                    "-m",
                    "dabench",
                    "-m",
                    "hardware.mode=measure",
                    f"model.n_layers={layers}",
                    f"model.hidden_size={hidden}",
                    "run.batch_size=1,4",
                    "precision=fp32,bf16",
                    *COMMON,
                    f"tracking.experiment={experiment}",
                ],
                work,
                env,
            )
    if not args.skip_measure:
        sh(
            [PY, "-m", "dabench", "-m", "hardware.mode=measure", *REPEAT, *COMMON, "tracking.experiment=fit_half"],
            work,
            env,
        )
    measured_s = time.time() - started

    # 2. fit from the fit half
    sh([PY, "-m", "dabench", "fit", "--from-mlflow", "fit_half", "--name", NAME], work, env, echo=True)

    # 3. predict the held-back half with the shipped constants and with the fitted set
    stamp = time.strftime("%H%M%S")  # a rerun with --skip-measure predicts into fresh experiments
    for constants, experiment in (("published", f"predict_published_{stamp}"), (NAME, f"predict_fitted_{stamp}")):
        for hidden, (_, held_layers) in SPLIT.items():
            sh(
                [
                    PY,
                    "-m",
                    "dabench",
                    "grid",
                    "--quiet",
                    "hardware.mode=predict",
                    f"hardware.constants={constants}",
                    f"model.n_layers={held_layers}",
                    f"model.hidden_size={hidden}",
                    "run.batch_size=1,4",
                    "precision=fp32,bf16",
                    *COMMON,
                    f"tracking.experiment={experiment}",
                ],
                work,
                env,
            )

    # 4. compare on the held-back half
    sys.path.insert(0, str(ROOT))
    held = runs(uri, "held_half", "measure")
    published = runs(uri, f"predict_published_{stamp}", "predict")
    fitted = runs(uri, f"predict_fitted_{stamp}", "predict")
    print(f"\nheld-back half: {len(held)} measured configs (took {measured_s / 60:.1f} min to measure everything)")
    print(
        f"{'layers':>6} {'hidden':>6} {'batch':>5} {'prec':>5} {'measured/s':>11} {'published':>10} {'error':>8} "
        f"{'fitted':>10} {'error':>8}"
    )
    pub_err, fit_err = [], []
    for key in sorted(held):
        m, p, f = held[key], published.get(key, math.nan), fitted.get(key, math.nan)
        pub_err.append(abs(p / m - 1) if p > 0 else math.inf)
        fit_err.append(abs(f / m - 1) if f > 0 else math.inf)
        print(
            f"{key[0]:>6} {key[1]:>6} {key[2]:>5} {key[3]:>5} {m:>11.3f} {p:>10.3f} {p / m - 1:>+8.1%} {f:>10.3f} "
            f"{f / m - 1:>+8.1%}"
        )
    data = json.loads((work / "constants" / f"{NAME}.json").read_text())
    entry = data["platforms"][args.hardware.split("_")[0]]
    floor = entry["comparison"]["noise_floor"]
    pub, fit = statistics.median(pub_err), statistics.median(fit_err)
    goal = fit <= 0.7 * pub or (pub <= 1.2 * floor and fit <= 1.2 * floor)
    print(
        f"set {NAME}: recommendation {entry['recommendation']}; noise floor {floor:.1%} "
        f"({entry['comparison']['noise_floor_method']}); band: {entry['band']['note']}"
    )
    print(
        f"goal (fitted <= 0.7 x published, or within 1.2 x the noise floor where published is): "
        f"{'met' if goal else 'NOT met'}; load average at end {os.getloadavg()[0]:.2f}; "
        f"total {(time.time() - started) / 60:.1f} min; workdir {work}"
    )
    if not args.keep and not args.workdir:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    print(
        f"published_median_abs_error={pub:.4f} fitted_median_abs_error={fit:.4f} noise_floor={floor:.4f} "
        f"points={len(data['source']['run_ids'])}"
    )
    return 0 if goal else 1


if __name__ == "__main__":
    sys.exit(main())
