"""The roofline figure of one run (PNG): ceilings, one point per op class, one for the step."""

from __future__ import annotations

from pathlib import Path

from dabench.metrics.roofline import RooflinePoint


def plot_roofline(points: list[RooflinePoint], peak_flops: float, bandwidth: float, title: str, path: Path,
                  predicted: bool) -> Path:
    """Log-log roofline: attainable = min(peak, I * bandwidth). Filled markers are achieved FLOP/s
    (measured, or predicted when ``predicted``); hollow markers sit on the roof where a class's
    own time is unknown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    intensities = [p.intensity for p in points if p.intensity > 0]
    lo = min(intensities + [peak_flops / bandwidth]) / 4
    hi = max(intensities + [peak_flops / bandwidth]) * 4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    ax.loglog(xs, [min(peak_flops, x * bandwidth) for x in xs], color="black", lw=1.5, label="roofline")
    ax.axvline(peak_flops / bandwidth, color="grey", ls=":", lw=1)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, p in enumerate(points):
        if p.intensity <= 0:
            continue
        color = "red" if p.name == "step" else colors[i % len(colors)]
        marker = "*" if p.name == "step" else "o"
        size = 160 if p.name == "step" else 50
        if p.achieved:
            ax.scatter([p.intensity], [p.achieved], color=color, marker=marker, s=size, zorder=3, label=p.name)
        else:
            ax.scatter([p.intensity], [p.attainable], facecolors="none", edgecolors=color, marker=marker, s=size,
                       zorder=3, label=f"{p.name} (roof only)")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s (per chip)")
    kind = "PREDICTED" if predicted else "measured"
    ax.set_title(f"{title} [{kind}]", fontsize=10)
    ax.grid(True, which="both", ls=":", lw=0.5)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
