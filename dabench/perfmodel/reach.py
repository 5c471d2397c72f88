"""How far a configuration lies from what was calibrated (:func:`coords`, :func:`distance`), and the
band that distance gives it (:func:`half_width`). Pure.

Derivation: docs/perfmodel.md, "Out-of-sample error and bands".
"""

from __future__ import annotations

import math
import re
from dataclasses import is_dataclass
from statistics import NormalDist
from typing import Any, Mapping, Sequence

from dabench.core.platforms import platform

#: distance units: per decade of model size, per doubling of chips, per categorical difference
WEIGHTS = {
    "size": 1.0,
    "chips": 1.0 / 3.0,
    "precision": 1.0,
    "compile": 1.0,
    "execution": 1.0,
    "release": 0.5,
    "generation": 1.0,
    "machine": 1.0,  # the CPU a host-CPU error was measured on (host/validation.py), as a GPU generation
}
FAR = 2.0  #: beyond this many units from every calibration point, nothing calibrated is nearby
#: distances below this many units are finer than the coordinates resolve (a 26% larger model, a third
#: of a chip doubling): two points that close differ in what the coordinates omit (sequence, batch, machine)
RESOLUTION = 0.1
#: the least widening per unit of distance of an 80% band (log space, ~10%): a band always grows with reach
GROWTH_MIN = 0.1
CATEGORIES = ("precision", "compile", "execution", "release", "generation")  #: a configuration's, from coords()
PLACE = ("machine",)  #: categorical coordinates of where an error was measured, not of the configuration
_RELEASE = re.compile(r"\bR(\d+\.\d+)")


def approx_params(model: Mapping[str, Any]) -> float:
    """Approximate trainable parameters of a model config mapping: the decoder blocks and the
    embedding/head; positions, norms and biases left out (about 1%)."""
    h = int(model.get("hidden_size") or 0)
    vocab = int(model.get("vocab_size") or 0)
    ffn = int(model.get("ffn_size") or 0) or int(float(model.get("ffn_mult") or 4) * h)
    mlp = (3 if str(model.get("ffn_type", "")) == "swiglu" else 2) * h * ffn
    heads = int(model.get("n_heads") or 1)
    attention = 2 * h * h + 2 * h * (h * int(model.get("n_kv_heads") or heads) // heads)  # q, out; k, v (GQA)
    cross = int(model.get("cross_attention_layers") or 0) * 4 * h * h
    embed = vocab * h * (1 if model.get("tie_embeddings", False) else 2)
    return float(int(model.get("n_layers") or 0) * (attention + mlp) + cross + embed)


def chip_count(arch: str, degree: int, replicas: int, tiles: Any = None) -> float:
    """Chips a deployment spans: degree x replicas, an RDU instance counted as its share of a chip."""
    chips = float(degree * replicas)
    per_chip = platform(arch).tiles_per_chip
    if per_chip and tiles is not None:
        chips *= int(tiles) / per_chip
    return chips


def coords(rc: Any, release: str = "") -> dict[str, Any]:
    """The reach coordinates of a built run config (``release`` from a calibration point's text)."""
    model = vars(rc.model) if is_dataclass(rc.model) else dict(rc.model)
    options = dict(rc.hardware.options or {})
    chips = chip_count(rc.hardware.arch, rc.parallel.degree, rc.parallel.replicas, options.get("tiles"))
    execution = str(options.get("execution_mode", ""))
    return {
        "size": math.log10(max(approx_params(model), 1.0)),
        "chips": math.log2(max(chips, 1.0)),
        "precision": rc.precision.name,
        "compile": str(options.get("compile_mode", "")),
        "execution": "" if execution == "auto" else execution,
        "release": release,
        "generation": rc.hardware.name if platform(rc.hardware.arch).generations else "",
        # the chip generation the preset's efficiencies belong to (not a distance: see constants.half_width)
        "silicon": str(options.get("generation", "")) if platform(rc.hardware.arch).generations else _preset(rc),
    }


def _preset(rc: Any) -> str:
    """A generation preset of a family without a generation knob (its record's ``presets``): its name."""
    return rc.hardware.name if rc.hardware.name in platform(rc.hardware.arch).presets else ""


def point_release(layout: str) -> str:
    """The software release a calibration point's layout text names (``R1.6``), else ""."""
    found = _RELEASE.search(layout)
    return f"R{found.group(1)}" if found else ""


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, float]:
    """Each coordinate's share of the distance; an unknown ("") category costs nothing."""
    out = {
        "size": WEIGHTS["size"] * abs(a["size"] - b["size"]),
        "chips": WEIGHTS["chips"] * abs(a["chips"] - b["chips"]),
        **{key: WEIGHTS[key] for key in CATEGORIES + PLACE if a.get(key) and b.get(key) and a[key] != b[key]},
    }
    return {k: v for k, v in out.items() if v > 0}


def distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    return sum(differences(a, b).values())


def conformal_rank(n: int, nominal: float) -> int:
    """1-based rank of the split-conformal quantile among ``n`` scores (may exceed ``n``)."""
    return math.ceil((n + 1) * nominal - 1e-12)


def conformal_q(scores: Sequence[float], nominal: float) -> float | None:
    """The split-conformal quantile of ``scores`` at ``nominal``; None when they are too few."""
    k = conformal_rank(len(scores), nominal)
    if not scores or k > len(scores):
        return None
    return sorted(scores)[k - 1]


def growth(needs: Sequence[float], nominal: float) -> float:
    """Widening per unit of distance: the conformal quantile of the calibration's own needs
    ((out-of-source error - base) / distance), at least :data:`GROWTH_MIN` scaled to ``nominal`` as a
    normal quantile is (an 80% band's floor; a 95% band's x1.53)."""
    q = conformal_q([n for n in needs if not math.isnan(n)], nominal)
    floor = GROWTH_MIN * NormalDist().inv_cdf((1 + nominal) / 2) / NormalDist().inv_cdf(0.9)
    return max(floor, q if q is not None and math.isfinite(q) else floor)


def half_width(
    x: Mapping[str, Any],
    points: Sequence[Mapping[str, Any]],
    wide: float,
    rate: float,
    nominal: float,
    evidence: str = "out-of-source errors",
) -> tuple[str, float, str]:
    """(kind ``near`` or ``wide``, log half-width, why) of the band at coordinates ``x`` from
    ``points``' scores (what they are: ``evidence``; docs/perfmodel.md, "Out-of-sample error and bands")."""
    if not points:
        return "wide", wide + rate * FAR, "nothing calibrated on this platform"
    q = conformal_q([p["score"] for p in points], nominal)
    base = q if q is not None and math.isfinite(q) else wide
    nearest = min(points, key=lambda p: distance(x, p["coords"]))
    d = distance(x, nearest["coords"])
    own = nearest["score"] if math.isfinite(nearest["score"]) else wide
    base = max(base, own)
    parts = differences(x, nearest["coords"])
    away = ", ".join(f"{k} {v:.2g}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])) or "none"
    why = (
        f"{100 * nominal:.0f}% band from {len(points)} {evidence}; nearest calibration "
        f"{nearest['id']} (out of source: off by x{math.exp(own):.3g}) at distance {d:.2g} ({away}), "
        f"+{rate:.3g}/unit"
    )
    if d > FAR:
        return "wide", max(base, wide) + rate * d, f"nothing calibrated nearby: {why}"
    return "near", base + rate * d, why
