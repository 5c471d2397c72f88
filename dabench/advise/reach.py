"""How far each platform's model is calibrated (:func:`calibration`: constants, model version,
out-of-sample, in-sample and excluded errors from residuals.json, and the span of the throughput
points in model size, chips and precision) and why a deployment lies outside it (:func:`outside`).
Model size is ``approx_params`` (decoder blocks and embedding/head, about 1% low) for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from dabench.config.compose import compose
from dabench.config.files import hardware_preset
from dabench.config.paths import CONF_DIR
from dabench.core.platforms import preset
from dabench.fit.points import load_points
from dabench.perfmodel.constants import model_version, residuals
from dabench.perfmodel.reach import approx_params, chip_count

THROUGHPUT = ("samples_per_s", "tokens_per_s")


def _point_chips(point) -> float:
    opts = dict(o.split("=", 1) for o in point.overrides if "=" in o)
    strategy = opts.get("parallel", "none")
    degree = int(opts.get("parallel.degree", 2 if strategy in ("dp", "tp", "pp") else 1))
    if strategy == "pp":  # t tensor-parallel chips per stage
        degree *= int(opts.get("hardware.options.stage_tensor_degree", 1))
    return max(
        1.0,
        chip_count(point.platform, degree, int(opts.get("parallel.replicas", 1)), opts.get("hardware.options.tiles")),
    )


@dataclass
class Coverage:
    params: tuple[float, float] | None = None
    chips: tuple[float, float] | None = None
    precisions: tuple[str, ...] = ()
    points: int = 0


@dataclass
class Calibration:
    platform: str
    constants: str
    model_version: str
    out_of_sample: list[tuple[str, float]] = field(default_factory=list)  #: (point id, signed error)
    in_sample: list[tuple[str, float]] = field(default_factory=list)
    excluded: list[tuple[str, float]] = field(default_factory=list)
    coverage: Coverage = field(default_factory=Coverage)

    def oos_text(self) -> str:
        if self.out_of_sample:
            worst = max(abs(e) for _, e in self.out_of_sample)
            return f"out-of-sample max |err| {worst:.0%} over {len(self.out_of_sample)} held-out points"
        if self.in_sample:
            worst = max(abs(e) for _, e in self.in_sample)
            return f"no held-out point (in-sample max |err| {worst:.0%} over {len(self.in_sample)} fitted points)"
        return "uncalibrated: no published throughput point"

    def excluded_text(self) -> str:
        return ", ".join(f"{i} {e:+.0%}" for i, e in self.excluded)


@lru_cache(maxsize=None)
def silicon(name: str) -> str:
    """The chip generation preset ``hardware=<name>`` is priced as (perfmodel/reach.coords' ``silicon``):
    its ``generation`` option in a family with generations, else a generation preset's own name."""
    record = preset(name)
    if record.generations:
        return str(hardware_preset(CONF_DIR / "hardware" / f"{name}.yaml")["options"].get("generation", ""))
    return name if name in record.presets else ""


def _preset_of(point) -> str:
    """The hardware preset a calibration point ran on (its ``hardware=`` override, else its platform)."""
    return next((o.split("=", 1)[1] for o in point.overrides if o.startswith("hardware=")), point.platform)


@lru_cache(maxsize=None)
def calibration(platform: str, constants: str = "published") -> Calibration:
    """``platform``'s calibration: its family's points of the same chip generation (a preset's
    efficiencies and specs are its generation's, not its family's other chips')."""
    arch = preset(platform).name
    ours = {p.id: p for p in load_points() if p.platform == arch and silicon(_preset_of(p)) == silicon(platform)}
    rows = [
        (r.get("use"), pid, float(r["error"]))
        for pid, r in sorted(residuals().get(arch, {}).items())
        if pid in ours and r.get("metric") in THROUGHPUT and r.get("error") is not None
    ]
    # out of sample (check points), in sample (fit points), excluded
    errors = [[(pid, error) for use, pid, error in rows if use == kind] for kind in ("check", "fit", "excluded")]
    cal = Calibration(platform, constants, model_version(platform), *errors)
    used = [p for p in ours.values() if p.metric in THROUGHPUT and p.use in ("fit", "check")]
    if used:
        # each point's model: its composed model section (its model and ``model.*`` overrides)
        sizes = [
            approx_params(
                compose([f"model={p.model}", *(f"++{o}" for o in p.overrides if o.startswith("model."))])["model"]
            )
            for p in used
        ]
        chips = [_point_chips(p) for p in used]
        cal.coverage = Coverage(
            (min(sizes), max(sizes)), (min(chips), max(chips)), tuple(sorted({p.precision for p in used})), len(used)
        )
    return cal


def _count(n: float) -> str:
    """A parameter count as people write it: 124M, 1.6B, 1T."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.3g}"


def outside(cal: Calibration, params: float, chips: float, precision: str) -> list[str]:
    """Why a deployment lies outside the platform's calibration points (empty when inside)."""
    cov = cal.coverage
    if not cov.points:
        return ["no calibration point on this platform"]
    why = []
    lo, hi = cov.params
    if params > hi * 1.05:
        why.append(f"model ~{_count(params)} params > largest calibrated ~{_count(hi)}")
    elif params < lo / 1.05:
        why.append(f"model ~{_count(params)} params < smallest calibrated ~{_count(lo)}")
    if chips > cov.chips[1]:
        why.append(f"{chips:g} chips > {cov.chips[1]:g} calibrated")
    if precision not in cov.precisions:
        why.append(f"precision {precision} not calibrated ({', '.join(cov.precisions)})")
    return why
