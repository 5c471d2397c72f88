"""Full predictions per second on one core: op graph -> analytical model -> Tier-1/2 metrics.

Varied configurations (every predicted architecture, model sizes, layer counts, batch sizes,
precisions, compile modes, placements and parallel layouts; a capacity failure counts as a
prediction too, since it is a result). Prints one line per architecture, then the total as
``configs_per_s=<N>`` on the last line. Target: at least 2,000 (issue 10). Every prediction goes
through :func:`dabench.predictor.predict`, the one predictor every caller uses (op graphs cached
there, as for every caller).

    python benchmarks/perfmodel_speed.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from omegaconf import OmegaConf  # noqa: E402

from dabench.config.build import build_run_config  # noqa: E402
from dabench.core.placement import Placement  # noqa: E402
from dabench.core.status import DabenchError, Status  # noqa: E402
from dabench.host.ceilings import resolve_ceilings  # noqa: E402
from dabench.predictor import predict  # noqa: E402


def load(group: str, name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / group / f"{name}.yaml"), resolve=False)


def configs():
    """Validated RunConfigs, built once (composition is not what is timed)."""
    out = []
    models = {name: load("model", name) for name in ("gpt2_test", "gpt2_small", "gpt2_medium")}
    parallel = {name: load("parallel", name) for name in ("none", "dp", "tp", "pp")}
    precision = {name: load("precision", name) for name in ("fp32", "fp16", "bf16", "mixed")}

    def make(model, n_layers, hw, par, prec, batch, grad_accum=1, options=None, **par_over):
        hardware = load("hardware", hw)
        hardware.pop("defaults", None)
        hardware["options"].update(options or {})
        cfg = {
            "model": {**models[model], "n_layers": n_layers},
            "hardware": hardware,
            "parallel": {**parallel[par], **par_over},
            "precision": precision[prec],
            "run": {"batch_size": batch, "grad_accum": grad_accum},
            "tracking": {"enabled": False},
        }
        out.append(build_run_config(cfg))

    for layers, batch, prec in itertools.product((6, 12, 24), (56, 112, 224), ("mixed", "fp16")):
        make("gpt2_small", layers, "wse2", "none", prec, batch)
    for layers, mode, prec in itertools.product((6, 12, 24), ("o0", "o1", "o3"), ("mixed", "fp32")):
        make("gpt2_small", layers, "rdu", "none", prec, 16, options={"compile_mode": mode})
    for degree in (2, 4):
        make("gpt2_small", 12, "rdu", "tp", "mixed", 16, degree=degree)
    for placement in ("0 4", "0 10", "0 4 4 4", "0 2 2 2 2 2 1 1", "0 1x14 2"):
        make(
            "gpt2_test",
            sum(Placement.parse(placement)),
            "ipu",
            "pp",
            "fp16",
            1,
            64,
            {"available_memory_proportion": 0.15},
            placement=placement,
        )
    for layers, prec in itertools.product((4, 8), ("fp16", "fp32")):
        make("gpt2_test", layers, "ipu", "none", prec, 1, 16)
    for layers, par in itertools.product((12, 24), ("none", "dp", "tp", "pp")):
        make("gpt2_medium", layers, "cuda", par, "bf16", 8, **({"degree": 4} if par != "none" else {}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget for the timed loop")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    rcs = configs()
    ceilings = {id(rc): resolve_ceilings(rc.hardware, rc.precision) for rc in rcs}

    def predict_one(rc) -> str:
        """The one predictor (op graph -> model -> checked metrics); the ceilings cached."""
        try:
            predict(rc, ceilings=ceilings[id(rc)])
        except DabenchError as error:
            return error.status.value
        return Status.OK.value

    for rc in rcs:  # warm-up: imports, caches
        predict_one(rc)
    per_arch: dict[str, list[float]] = {}
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        for rc in rcs:
            t0 = time.perf_counter()
            predict_one(rc)
            per_arch.setdefault(rc.hardware.arch, []).append(time.perf_counter() - t0)
            done += 1
    elapsed = time.perf_counter() - start
    for arch, times in sorted(per_arch.items()):
        print(f"{arch}: {len(times) / sum(times):,.0f} predictions/s ({sum(times) / len(times) * 1e6:,.0f} us each)")
    print(f"configs={len(rcs)} predictions={done} seconds={elapsed:.2f} torch_imported={'torch' in sys.modules}")
    print(f"configs_per_s={done / elapsed:.0f}")


if __name__ == "__main__":
    main()
