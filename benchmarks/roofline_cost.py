"""What the per-run roofline costs a measured run: the plot (roofline points + roofline.svg, as
dabench/report/artifacts.py draws it) against the run itself (`dabench.pipeline.execute.execute` of a tiny
measured CPU run), side by side in one process, several rounds.

The run's share is taken against `execute` alone, without the process start, imports and MLflow
logging a CLI run adds, so the real share is smaller. The CPU ceilings come from a throwaway cache
holding the test suite's fixture values (tests/conftest.py, labelled as such): the plot's cost does
not depend on them, and a calibration would be refused on a loaded machine (no roof, no plot).

    python benchmarks/roofline_cost.py [--rounds 5]

Last line: plot_ms=<median> run_s=<median> share=<plot / run> matplotlib_imported=<bool>
(target: share < 0.05, issue 15 item 4).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="dabench_roofline_cost_"))
    os.environ["DABENCH_CACHE_DIR"] = str(cache)
    from tests.conftest import composed, write_test_calibration

    write_test_calibration(cache, "benchmarks/roofline_cost.py fixture (tests/conftest.py), not a measurement")

    from dabench.config.build import build_run_config
    from dabench.metrics.summary import roofline_points
    from dabench.pipeline.execute import execute
    from dabench.report.roofline_plot import roofline_svg

    rc = build_run_config(
        composed(["hardware=cpu", "hardware.mode=measure", "run.warmup_steps=1", "run.timed_steps=2"])
    )
    run_s, plot_ms = [], []
    for round_ in range(args.rounds):
        start = time.perf_counter()
        result = execute(rc)
        run_s.append(time.perf_counter() - start)
        assert result.status.value == "ok", result.reason
        start = time.perf_counter()
        points = roofline_points(result.graph, result.profile, result.ceilings, rc.data_copies)
        svg = roofline_svg(
            points,
            result.ceilings.peak_flops,
            result.ceilings.bandwidth_Bps,
            "tiny cpu measure",
            predicted=False,
            memory_level=result.ceilings.memory_level,
        )
        (cache / "roofline.svg").write_text(svg)
        plot_ms.append((time.perf_counter() - start) * 1e3)
        print(
            f"round {round_ + 1}: run {run_s[-1]:.2f} s, plot {plot_ms[-1]:.2f} ms "
            f"({plot_ms[-1] / 1e3 / run_s[-1]:.3%}), loadavg {open('/proc/loadavg').read().split()[:3]}"
        )
    plot, run = statistics.median(plot_ms), statistics.median(run_s)
    print(
        f"plot_ms={plot:.2f} run_s={run:.2f} share={plot / 1e3 / run:.5f} "
        f"matplotlib_imported={'matplotlib' in sys.modules}"
    )


if __name__ == "__main__":
    main()
