"""The roofline figure of one run (PNG): the roof, one point per op class, one for the step."""

from __future__ import annotations

from pathlib import Path

from dabench.metrics.roofline import RooflinePoint


def plot_roofline(points: list[RooflinePoint], peak_flops: float, bandwidth: float, title: str, path: Path,
                  predicted: bool, memory_level: str = "main memory",
                  predicted_points: list[RooflinePoint] | None = None) -> Path:
    """Log-log roofline: attainable FLOP/s = min(peak, I * bandwidth), with the run's own ceilings
    (peak at the run's precision, ``bandwidth`` of ``memory_level``).

    ``points`` are measured (filled circles, the step a filled star) unless ``predicted``, then
    they are drawn as predicted (hollow diamonds, the step a hollow star); ``predicted_points``
    (validate mode) adds the prediction beside the measurement. A class whose own time is unknown
    has no achieved FLOP/s: it is marked with an 'x' on the roof, at its intensity only."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    groups = [(points, predicted)] + ([(predicted_points, True)] if predicted_points else [])
    intensities = [p.intensity for group, _ in groups for p in group if p.intensity > 0]
    ridge = peak_flops / bandwidth
    lo = min(intensities + [ridge]) / 4
    hi = max(intensities + [ridge]) * 4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig = Figure(figsize=(9.5, 4.8), dpi=110, layout="constrained")
    ax = fig.subplots()
    ax.loglog(xs, [min(peak_flops, x * bandwidth) for x in xs], color="black", lw=1.5,
              label=f"roof: min({peak_flops / 1e12:.3g} TFLOP/s, I x {bandwidth / 1e9:.3g} GB/s {memory_level})")
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    colors = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")
    class_color: dict[str, str] = {}
    for group, is_predicted in groups:
        kind = "PREDICTED" if is_predicted else "measured"
        for p in group:
            if p.intensity <= 0:
                continue
            step = p.name == "step"
            color = "red" if step else class_color.setdefault(p.name, colors[len(class_color) % len(colors)])
            marker = "*" if step else ("D" if is_predicted else "o")
            size = 170 if step else 45
            if p.achieved:
                ax.scatter([p.intensity], [p.achieved], marker=marker, s=size, zorder=3, edgecolors=color,
                           facecolors="none" if is_predicted else color, linewidths=1.4,
                           label=f"{p.name} ({kind})")
            elif not is_predicted or not predicted_points:
                ax.scatter([p.intensity], [p.attainable], marker="x", s=size, color=color, zorder=3,
                           label=f"{p.name} (no own time: on the roof)")
    ax.set_xlabel(f"arithmetic intensity (FLOP/byte of {memory_level} traffic)")
    ax.set_ylabel("FLOP/s per chip")
    kinds = "measured and PREDICTED" if predicted_points else ("PREDICTED" if predicted else "measured")
    ax.set_title(f"{title} [{kinds}]", fontsize=10)
    ax.grid(True, which="both", ls=":", lw=0.5)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.savefig(path)
    return path
