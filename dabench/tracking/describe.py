"""What a run says about itself: the one-line summary (printed after a run) and, in its MLflow
description (``mlflow.note.content``), that line and the shell-quoted, redacted command that
reproduces it.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any, Sequence

from dabench.core.result import RunResult
from dabench.core.status import is_ok
from dabench.host.validation import GRID, SOURCE
from dabench.tracking.redact import redact_override, redact_text

NOTE_TAG = "mlflow.note.content"
#: the tier-1 metrics a summary line shows when the run has them, and how
_TIER1_SHOWN = (
    ("tier1.compute_efficiency", "compute eff {:.1%}"),
    ("tier1.allocation_ratio", "alloc {:.1%}"),
    ("tier1.load_imbalance", "LI {:.2f}"),
)


def summary_line(result: RunResult, name: str) -> str:
    """``dabench: <status> | <mode> | <name> | samples/s [band] | tokens/s | step | ...``, one line;
    a validate run says whether the measurement fell inside the prediction's band."""
    m = result.metrics
    if not is_ok(result.status):
        return f"dabench: {result.status.value} | {name} | {result.reason.splitlines()[0] if result.reason else ''}"
    kind = "PREDICTED" if result.mode == "predict" else result.mode
    rate = f"{_rate(m['throughput.samples_per_s'], 1)} samples/s"
    if "throughput.samples_per_s.lo" in m and "throughput.samples_per_s.hi" in m:
        band = f"[{_sig3(m['throughput.samples_per_s.lo'])}-{_sig3(m['throughput.samples_per_s.hi'])}]"
        rate += f" {band} PREDICTED" if result.mode == "predict" else f" {band} measured"
    parts = [
        f"dabench: ok | {kind} | {name}",
        rate,
        f"{_rate(m['throughput.tokens_per_s'], 0)} tokens/s",
        f"step {m['step_time.median_s'] * 1e3:,.2f} ms",
    ]
    parts += [shown.format(m[key]) for key, shown in _TIER1_SHOWN if key in m]
    if "predict.rel_error.samples_per_s" in m:
        error = f"prediction error {m['predict.rel_error.samples_per_s']:+.1%}"
        if "predict.throughput.samples_per_s.lo" in m:
            band = (
                f"[{_sig3(m['predict.throughput.samples_per_s.lo'])}-{_sig3(m['predict.throughput.samples_per_s.hi'])}]"
            )
            inside = m.get("predict.within_band") == 1
            note = result.notes.get("dabench.band", "")
            origin = next((f", from {where}" for where in (GRID, SOURCE) if where in note), "")
            error += f" ({'inside' if inside else 'OUTSIDE'} its band {band}{origin})"
        parts.append(error)
    if result.diagnosis:
        parts.append(result.diagnosis[0])
    return " | ".join(parts)


def _rate(value: float, decimals: int) -> str:
    """A rate with ``decimals`` decimals from 10 up, below that three significant digits (never 0.0)."""
    return f"{value:,.{decimals}f}" if abs(value) >= 10 else _sig3(value)


def _sig3(value: float) -> str:
    """Three significant digits with thousands separators: 1,100; 20.5; 0.0123."""
    rounded = float(f"{value:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 100 else f"{rounded:.3g}"


def reproduce_command(overrides: Sequence[str], module: str = "dabench", multirun: bool = False) -> str:
    """``<sys.executable> -m <module> <overrides> [-m]``, shell-quoted, credentials masked."""
    words = [shlex.quote(sys.executable), "-m", module, *(shlex.quote(redact_override(str(o))) for o in overrides)]
    return " ".join(words + (["-m"] if multirun else []))


def task_overrides(hydra_node: Any) -> list[str]:
    """``overrides.task`` of a ``hydra`` node as typed: an override's ``${...}`` is its text here, never
    resolved (resolving it gave another value, or failed for a key that does not exist)."""
    from omegaconf import OmegaConf

    task = OmegaConf.select(hydra_node, "overrides.task")
    return [str(o) for o in OmegaConf.to_container(task, resolve=False)] if task is not None else []


def hydra_overrides() -> list[str] | None:
    """The running Hydra job's own overrides (``hydra.overrides.task``), None outside a Hydra job."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return task_overrides(HydraConfig.get()) if HydraConfig.initialized() else None
    except Exception:
        return None


def run_note(summary: str, command: str) -> str:
    """The run's description: the summary line, then how to reproduce it."""
    return f"{redact_text(summary)}\n\nReproduce:\n\n    {command}"


def requested_mode(hardware_mode: str | None) -> str:
    """A sweep parent's ``dabench.mode`` before its runs end: ``predict``, ``measure`` or ``auto``."""
    mode = str(hardware_mode or "auto")
    return {"predict": "predict", "measure": "measure", "validate": "measure"}.get(mode, "auto")
