"""Refit the CPU model's fitted knobs (conf/hardware/cpu.yaml: memory_efficiency, launch_s,
matmul_half_flops) to this machine, load-robustly.

Wall time on a shared machine measures the other processes; the CPU time of a single-threaded
process measures (mostly) the work. So everything here runs at one torch thread and is timed
with ``time.thread_time``: the ceilings (median of 7 repeats of a 1024^3 matmul and of a 256 MiB
copy) and the median of 5 training steps of each point of benchmarks/validate_cpu.py's grid
(layers {2, 4, 8} x hidden {128, 256, 512} x batch {1, 4, 16}, fp32). The knobs are then fitted
by bounded least squares on log(measured / predicted step time) (scipy.optimize.least_squares),
starting from the YAML's values. It prints the fit, the per-point errors and the median / max
|error| before and after; it writes nothing: copy the numbers into conf/hardware/cpu.yaml and
sources/cpu.yaml by hand. Caveats: CPU time still grows somewhat under contention (shared
caches), and two threads add synchronisation the one-thread fit does not see; check the result
with benchmarks/validate_cpu.py on a quiet machine.

    python benchmarks/fit_cpu_model.py [--data saved.json] [--save saved.json]
    python benchmarks/fit_cpu_model.py --grid heldout --no-fit   # out-of-sample check, same method

``--set KEY=VALUE ...`` prices the predictions with other knob values (e.g. a mechanism off).
``--grid heldout`` measures points the fit never saw (layers {3, 6} x hidden {192, 384} x batch
{2, 8}, sequence 64 and 256) and, with ``--no-fit``, only reports the shipped knobs' errors on them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dabench.runtime.quiet import install as quiet  # noqa: E402  (before torch loads: libkineto's USDT lines off)

quiet()

BOUNDS = {"launch_s": (1e-5, 3e-4), "matmul_half_flops": (1e5, 2e8), "memory_efficiency": (0.1, 1.0)}


def compose(overrides: list[str]) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        return OmegaConf.to_container(hydra_compose("config", overrides=overrides), resolve=True)


def point_overrides(layers: int, hidden: int, batch: int, seq: int = 128) -> list[str]:
    heads = 8 if hidden >= 512 else 4
    return [
        "hardware.mode=measure",
        "precision=fp32",
        f"model.n_layers={layers}",
        f"model.hidden_size={hidden}",
        f"model.n_heads={heads}",
        f"run.batch_size={batch}",
        f"model.seq_len={seq}",
        "run.threads=1",
    ]


VALIDATE_GRID = list(itertools.product((2, 4, 8), (128, 256, 512), (1, 4, 16), (128,)))
HELDOUT_GRID = list(itertools.product((3, 6), (192, 384), (2, 8), (64, 256)))


def measure(grid) -> dict:
    import torch

    from dabench.backends.torch_train import build_train_state
    from dabench.config.build import build_run_config

    torch.set_num_threads(1)

    def rates(fn, work, reps=7):
        fn()
        out = []
        for _ in range(reps):
            start = time.thread_time()
            fn()
            out.append(work / (time.thread_time() - start))
        return out

    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    src = torch.ones(64 * 2**20)
    dst = torch.empty_like(src)
    data = {
        "matmul": rates(lambda: torch.mm(a, b), 2.0 * n**3),
        "copy": rates(lambda: dst.copy_(src), 8.0 * src.numel()),
        "load_per_core": os.getloadavg()[0] / (os.cpu_count() or 1),
        "rows": [],
    }
    for layers, hidden, batch, seq in grid:
        rc = build_run_config(compose(point_overrides(layers, hidden, batch, seq)))
        state = build_train_state(rc, torch.device("cpu"))
        for _ in range(2):
            state.step()
        times = []
        for _ in range(5):
            start = time.thread_time()
            state.step()
            times.append(time.thread_time() - start)
        data["rows"].append(
            {
                "ov": point_overrides(layers, hidden, batch, seq),
                "L": layers,
                "H": hidden,
                "B": batch,
                "S": seq,
                "cpu_step_s": statistics.median(times),
            }
        )
        print(f"measured {layers} {hidden} {batch} {seq}: {statistics.median(times) * 1e3:.1f} ms CPU", flush=True)
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="fit to saved measurements instead of measuring")
    ap.add_argument("--save", help="save the measurements here")
    ap.add_argument("--grid", choices=("validate", "heldout"), default="validate")
    ap.add_argument("--no-fit", action="store_true", help="only report the shipped knobs' errors")
    ap.add_argument(
        "--set",
        nargs="*",
        default=(),
        help="Hydra overrides for the predictions, e.g. hardware.options.gelu_element_flops=0 (the model without it)",
    )
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores "
        "(CPU time at 1 thread: load-robust, not immune)"
    )
    data = (
        json.loads(Path(args.data).read_text())
        if args.data
        else measure(VALIDATE_GRID if args.grid == "validate" else HELDOUT_GRID)
    )
    if args.save:
        Path(args.save).write_text(json.dumps(data, indent=1))

    from scipy.optimize import least_squares

    from dabench.config.build import build_run_config
    from dabench.host import calibrate as calibration
    from dabench.host.ceilings import resolve_ceilings
    from dabench.perfmodel import get_predictor
    from dabench.workload.opgraph import build_opgraph

    # the CPU-time ceilings, as the calibration cache for this (1-thread) key, in a private folder
    folder = tempfile.mkdtemp(prefix="dabench_fit_")
    os.environ["DABENCH_CACHE_DIR"] = folder
    calibration._PROCESS.clear()
    entries = {}
    for kind, values in (("gemm_fp32", data["matmul"]), ("copy", data["copy"])):
        key = calibration.calibration_key(kind)
        entries[key] = {
            "key": key,
            "value": statistics.median(values),
            "samples": values,
            "spread": 0.0,
            "load_per_core": 0.0,
            "measured_at": "benchmarks/fit_cpu_model.py (CPU time)",
        }
    Path(folder, "calibration.json").write_text(json.dumps(entries))

    rows = data["rows"]
    configs = [compose(r["ov"] + list(args.set)) for r in rows]
    names = ("launch_s", "matmul_half_flops", "memory_efficiency")

    def errors(x) -> list[float]:
        out = []
        for row, config in zip(rows, configs, strict=False):
            hw = dict(config["hardware"])
            hw["options"] = {**hw["options"], **dict(zip(names, (float(v) for v in x), strict=False))}
            rc = build_run_config({**config, "hardware": hw})
            graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
            predicted = get_predictor("cpu")(rc, graph, resolve_ceilings(rc.hardware, rc.precision)).median_step_s
            out.append(row["cpu_step_s"] / predicted - 1.0)  # = error of the predicted throughput
        return out

    def show(label, x):
        e = [abs(v) for v in errors(x)]
        print(
            f"{label}: "
            + ", ".join(f"{n}={v:.3g}" for n, v in zip(names, x, strict=False))
            + f" -> median |error| {statistics.median(e):.1%}, max {max(e):.1%}"
        )

    start = [float(configs[0]["hardware"]["options"][n]) for n in names]
    start = [min(max(v, BOUNDS[n][0]), BOUNDS[n][1]) for n, v in zip(names, start, strict=False)]
    shipped = [float(configs[0]["hardware"]["options"][n]) for n in names]
    show("shipped", shipped)
    if args.no_fit:
        for row, e in zip(rows, errors(shipped), strict=False):
            print(f"  layers {row['L']} hidden {row['H']} batch {row['B']} seq {row.get('S', 128)}: {e:+.1%}")
        e = [abs(v) for v in errors(shipped)]
        print(f"median_abs_error={statistics.median(e):.4f} max_abs_error={max(e):.4f}")
        return 0
    fit = least_squares(
        lambda x: [math.log1p(e) for e in errors(x)],
        x0=start,
        bounds=([BOUNDS[n][0] for n in names], [BOUNDS[n][1] for n in names]),
        x_scale=[1e-5, 1e6, 0.1],
        diff_step=[0.05] * 3,
    )
    show("fitted", fit.x)
    for row, e in zip(rows, errors(fit.x), strict=False):
        print(f"  layers {row['L']} hidden {row['H']} batch {row['B']}: {e:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
