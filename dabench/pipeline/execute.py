"""The one pipeline: RunConfig -> op graph -> backend and/or analytical model -> metrics.

:func:`execute` runs one configuration start to end, without MLflow, in one straight line
(docs/architecture.md); every outcome becomes a :class:`RunResult` with a status, nothing raises
for a failed run. Predictions come from the one predictor (:mod:`dabench.predictor`), whose
op graph the measured path shares. torch is imported only when a backend measures.
"""

from __future__ import annotations

import logging
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator

from dabench.backends import Backend, get_backend
from dabench.config.sections import RunConfig
from dabench.core.ceilings import Ceilings
from dabench.core.platforms import on_host_cpu, platform
from dabench.core.profile import Profile
from dabench.core.result import RunResult
from dabench.core.status import DabenchError, Status, UnsupportedError
from dabench.host.ceilings import (
    MeasuredRoof,
    WindowProbes,
    can_probe,
    host_cpu_ceilings,
    is_calibrated,
    measured_roof,
    resolve_ceilings,
)
from dabench.host.conditions import run_threads
from dabench.host.noise import band_metrics as ceiling_band_metrics
from dabench.host.noise import held_to_band_top, noise_note
from dabench.metrics.checks import CheckFailure, check_result, without_ceiling_metrics
from dabench.metrics.summary import compute_metrics, diagnosis, roofline_points
from dabench.perfmodel import has_model
from dabench.perfmodel.comm_check import comm_prediction_metrics
from dabench.perfmodel.constants import model_version, validate_point
from dabench.perfmodel.constants import run_tags as model_tags
from dabench.predictor import band, opgraph, predict
from dabench.workload.opgraph import OpGraph

log = logging.getLogger(__name__)

#: metrics compared between measurement and prediction in validate mode
VALIDATED_METRICS = ("throughput.samples_per_s", "step_time.median_s", "tier1.compute_efficiency", "tier2.comm_time_s")


_AUTO_WARNED: set[tuple[str, str]] = set()  #: (hardware, note) already warned in this process


def resolve_mode(rc: RunConfig, backend: type[Backend] | None = None, warn: bool = True) -> tuple[str, str]:
    """(mode, note). ``auto`` measures when the backend is available and otherwise predicts,
    saying so (a warning once per process, none when not ``warn``); ``measure``/``validate``
    without the device, or ``predict`` without a model, raise UnsupportedError. ``backend``: the
    run's backend class when the caller already has it."""
    requested = rc.hardware.mode
    modelled = has_model(rc.hardware.arch)
    if requested == "predict":
        if not modelled:
            raise UnsupportedError(f"hardware.mode=predict: no analytical model for arch {rc.hardware.arch!r} yet")
        return "predict", ""
    availability = (backend or get_backend(rc.hardware.backend)).availability(rc)
    if requested in ("measure", "validate"):
        if not availability.ok:
            raise UnsupportedError(f"hardware.mode={requested} on hardware={rc.hardware.name}: {availability.reason}")
        if requested == "validate" and not modelled:
            raise UnsupportedError(f"hardware.mode=validate: no analytical model for arch {rc.hardware.arch!r} yet")
        return requested, ""
    if availability.ok:
        return "measure", ""
    if modelled:
        note = f"PREDICTED, not measured: {availability.reason}"
        first = (rc.hardware.name, note) not in _AUTO_WARNED  # once per process: a sweep repeats it per job
        _AUTO_WARNED.add((rc.hardware.name, note))
        if warn:
            log.log(logging.WARNING if first else logging.DEBUG, "hardware.mode=auto on %s: %s", rc.hardware.name, note)
        return "predict", note
    raise UnsupportedError(
        f"hardware={rc.hardware.name}: cannot measure ({availability.reason}) and no "
        f"analytical model exists for arch {rc.hardware.arch!r} yet"
    )


def run_ceilings(rc: RunConfig, measured_on: type[Backend] | None, notes: dict[str, str]) -> Ceilings:
    """The run's ceilings: the spec's, or this CPU's calibration where the spec says null, or
    the calibrated CPU's for a host backend standing in for the target (said in ``notes``)."""
    ceilings = resolve_ceilings(rc.hardware, rc.precision)
    if measured_on is None or not on_host_cpu(measured_on.name) or platform(rc.hardware.arch).host_cpu:
        return ceilings
    notes["dabench.ceilings_note"] = (
        f"backend {measured_on.name} runs on this machine's CPU: "
        f"efficiencies are against the calibrated CPU, not {rc.hardware.name}"
    )
    return host_cpu_ceilings(rc.precision)


@dataclass
class Measurement:
    """What :func:`measure_run` hands on."""

    profile: Profile
    model_ceilings: Ceilings  #: what the prediction is priced at (validate: the in-situ probes)
    #: the ceilings' bands (none where the spec set them); ``roof.roof``, the fastest rates shown, is
    #: what the run's metrics are taken against
    roof: MeasuredRoof
    calibrated: Ceilings  #: the ceilings before any probe (the calibration's medians or the spec)
    readings: tuple = ()  #: the in-situ probes taken so far (dabench.host.calibrate.Probe)


def measure_run(backend: Backend, rc: RunConfig, graph: OpGraph, ceilings: Ceilings) -> Measurement:
    """Measure on ``backend``; calibrated ceilings become bands and a CPU validate run probes
    the CPU around its timed window (docs/metrics.md, in-situ ceilings). A torch backend's
    parallel run goes to torch.distributed ranks (no probes there), its collectives priced too in
    validate mode."""
    probes = None
    if rc.hardware.mode == "validate" and can_probe(rc.hardware, rc.parallel.strategy) and is_calibrated(ceilings):
        probes = WindowProbes(rc.precision.compute_dtype)
    if rc.parallel.strategy != "none" and backend.torch_distributed:
        from dabench.distributed.run import run_parallel  # imports torch

        profile = run_parallel(rc, *backend.parallel_target(rc))
        if rc.hardware.mode == "validate":
            profile.extra_metrics.update(comm_prediction_metrics(rc, profile.comm, profile.extra_metrics))
    else:
        profile = backend.run(rc, graph, on_timed_window=probes)
    in_situ = probes.ceilings(ceilings) if probes is not None else None
    model_ceilings = ceilings
    if in_situ is not None:
        model_ceilings, probed = in_situ
        profile.extra_metrics.update(probed)
    readings = tuple(probes.readings) if in_situ is not None else ()
    return Measurement(
        profile, model_ceilings, measured_roof(ceilings, rc.precision.compute_dtype, readings), ceilings, readings
    )


def probe_again(rc: RunConfig, measurement: Measurement) -> Measurement | None:
    """``measurement`` with one more in-situ probe, taken now, in its roof and band; None when this
    run's ceilings cannot be probed. For a measurement that broke a bound (docs/metrics.md)."""
    if not (can_probe(rc.hardware, rc.parallel.strategy) and measurement.roof.peak is not None):
        return None
    from dabench.host.calibrate import probe

    readings = (*measurement.readings, probe(rc.precision.compute_dtype))
    roof = measured_roof(measurement.calibrated, rc.precision.compute_dtype, readings)
    return replace(measurement, roof=roof, readings=readings)


def band_ceilings(result: RunResult, roof: MeasuredRoof) -> None:
    """The ceilings' and efficiencies' bands into ``result.metrics`` and how noisy the machine was
    into ``result.notes['dabench.ceilings_noise']`` (:mod:`dabench.host.noise`)."""
    if roof.peak is None and roof.bandwidth is None:
        return
    from dabench.host.calibrate import load_per_core

    result.metrics.update(ceiling_band_metrics(result.metrics, roof.peak, roof.bandwidth, roof.roof.memory_level))
    result.notes["dabench.ceilings_noise"] = noise_note(roof.peak, roof.bandwidth, load_per_core())


def validate_run(measured: dict[str, float], predicted: dict[str, float]) -> dict[str, float]:
    """The prediction beside the measurement: ``predict.<metric>`` and
    ``predict.rel_error.<metric>`` for each of :data:`VALIDATED_METRICS` both have."""
    out: dict[str, float] = {}
    for name in VALIDATED_METRICS:
        if name in predicted and name in measured:
            out[f"predict.{name}"] = predicted[name]
            short = name.split(".", 1)[1] if name.startswith("throughput.") else name.replace(".", "_")
            m = measured[name]
            out[f"predict.rel_error.{short}"] = (predicted[name] - m) / m if m else float("nan")
    return out


def within_band(metrics: dict[str, float]) -> dict[str, float]:
    """``predict.within_band``: 1 when the measured samples/s lies inside the prediction's band
    (``predict.throughput.samples_per_s.lo`` / ``.hi``), else 0; {} when there is no band."""
    lo, hi = metrics.get("predict.throughput.samples_per_s.lo"), metrics.get("predict.throughput.samples_per_s.hi")
    measured = metrics.get("throughput.samples_per_s")
    if lo is None or hi is None or measured is None:
        return {}
    return {"predict.within_band": float(lo <= measured <= hi)}


def measured_points_bound(
    points: list, ceilings: Ceilings, notes: dict[str, str], peak_limit: float | None = None
) -> list:
    """Measured roofline points bounded by the compute roof only (``peak_limit``, default the
    peak); classes above the memory roof are named in ``notes`` (docs/metrics.md)."""
    above = [p.name for p in points if p.achieved is not None and p.achieved > p.attainable * 1.0001]
    if above:
        notes["dabench.roofline_note"] = (
            f"measured op classes above the {ceilings.memory_level} roof (a working set "
            f"served from cache): {', '.join(above)}"
        )
    limit = ceilings.peak_flops if peak_limit is None else peak_limit
    return [replace(p, attainable=limit) for p in points]


def check_run(
    result: RunResult, predicted: dict[str, float] | None, roof: MeasuredRoof | None = None
) -> CheckFailure | None:
    """The result check before anything is recorded (dabench/metrics/checks.py): the run's
    metrics, a validate run's prediction, the roofline points when calibrated; a banded
    measurement is held to the band's top. Never clamps."""
    rc, graph, ceilings = result.run_config, result.graph, result.ceilings
    calibrated = is_calibrated(ceilings)
    points = (
        []
        if result.predicted is None or not calibrated
        else roofline_points(graph, result.predicted, ceilings, rc.data_copies)
    )
    peak_limit = roof.check_roof.peak_flops if roof is not None else None
    if result.profile is not None and calibrated:
        points += measured_points_bound(
            roofline_points(graph, result.profile, ceilings, rc.data_copies), ceilings, result.notes, peak_limit
        )
    metrics = result.metrics
    if roof is not None and result.profile is not None:
        metrics = held_to_band_top(metrics, roof.peak, roof.bandwidth, roof.roof.memory_level)
    if predicted is not None and result.profile is not None:
        metrics = {**{f"predict.{k}": v for k, v in predicted.items()}, **metrics}
    return check_result(metrics, points)


@contextmanager
def _cpu_threads(rc: RunConfig, mode: str) -> Iterator[None]:
    """A measured CPU run's threads (``run.threads``), the previous count restored after it."""
    if not platform(rc.hardware.arch).host_cpu or (mode == "predict" and not rc.run.threads):
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(run_threads(rc.run.threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run(rc: RunConfig, result: RunResult) -> None:
    """Fill ``result`` in: mode, graph, ceilings, profile(s), metrics, diagnosis, status."""
    backend = None if rc.hardware.mode == "predict" else get_backend(rc.hardware.backend)
    result.mode, note = resolve_mode(rc, backend)
    if note:
        result.notes["dabench.mode_note"] = note
    with _cpu_threads(rc, result.mode):
        result.graph = graph = opgraph(rc)
        measured = result.mode in ("measure", "validate")
        result.ceilings = ceilings = run_ceilings(rc, backend if measured else None, result.notes)
        measurement = measure_run(backend(), rc, graph, ceilings) if measured else None
        if measurement is not None:
            result.profile = measurement.profile
        failure = _evaluate(rc, result, graph, ceilings, measurement)
        if failure is not None and failure.status is Status.INVALID_RESULT and measurement is not None:
            again = probe_again(rc, measurement)  # a faster phase than the calibration's? probe once more
            if again is not None:
                result.notes["dabench.probed_again"] = f"probed after the run, it broke a bound: {failure.reason[:300]}"
                failure = _evaluate(rc, result, graph, ceilings, again)
        if failure is not None:
            result.status, result.reason = failure.status, failure.reason
        unsteady = result.profile.tags.get("unsteady") if result.profile is not None else None
        if unsteady:  # a disturbed measurement's numbers are recorded, never as ok, nor judged against a prediction
            extra = f" (its result check also failed: {result.reason[:300]})" if failure is not None else ""
            result.status, result.reason = Status.UNSTEADY, f"unsteady: {unsteady}{extra}"
        if result.mode == "validate" and result.status is Status.OK and platform(rc.hardware.arch).host_cpu:
            from dabench.host import validation  # this machine's own error: its band's evidence

            validation.record(model_version(rc.hardware.arch), validate_point(rc, result.metrics))


def _evaluate(
    rc: RunConfig, result: RunResult, graph: OpGraph, ceilings: Ceilings, measurement: Measurement | None
) -> CheckFailure | None:
    """Fill ``result``'s ceilings, prediction, metrics, diagnosis and bands from ``measurement``
    (None: predicted only) and return the result check's failure, if any."""
    model_ceilings = ceilings
    result.notes.pop("dabench.roofline_note", None)  # set again by this evaluation's check
    if measurement is not None:
        result.ceilings = ceilings = measurement.roof.roof
        model_ceilings = measurement.model_ceilings
    prediction = None
    if result.mode in ("predict", "validate"):  # which model, and how far its calibration points miss
        result.notes.update(model_tags(rc.hardware.arch, rc.hardware.constants, rc))
        prediction = predict(rc, ceilings, model_ceilings, check=False)  # checked with the whole result below
        result.predicted = prediction.profile
    if result.profile is None:
        result.metrics = prediction.metrics
    else:
        result.metrics = compute_metrics(result.profile, graph, ceilings, rc.data_copies)
        band_ceilings(result, measurement.roof)
    main = result.profile if result.profile is not None else result.predicted
    calibrated = is_calibrated(ceilings)  # False: CPU calibration refused (busy), none cached
    result.diagnosis = (
        diagnosis(main, graph, ceilings, result.metrics, rc.data_copies)
        if calibrated
        else ("undiagnosed", f"no hardware ceilings: {ceilings.source}")
    )
    if result.mode == "validate":
        result.metrics.update(validate_run(result.metrics, prediction.metrics))
    if prediction is not None:  # each predicted number's band
        result.metrics.update(band(rc, result.metrics))
        if result.mode == "validate":
            result.metrics.update(within_band(result.metrics))
    if not calibrated:  # record no number relative to a ceiling rather than a guessed one
        result.metrics = without_ceiling_metrics(result.metrics)
        result.notes["dabench.ceilings_note"] = f"efficiency and roofline metrics absent: {ceilings.source}"
    return check_run(
        result, prediction.metrics if prediction is not None else None, measurement.roof if measurement else None
    )


def execute(rc: RunConfig) -> RunResult:
    """Run one configuration and return its result; never raises for a failed run."""
    result = RunResult(Status.OK, "", rc.hardware.mode if rc.hardware.mode != "auto" else "measure", run_config=rc)
    try:
        _run(rc, result)
    except DabenchError as error:
        result.status, result.reason = error.status, error.reason
    except Exception as error:  # a failure is a result: record it, let the sweep go on
        if type(error).__name__ == "OutOfMemoryError" or isinstance(error, MemoryError):
            result.status, result.reason = Status.OOM, str(error).splitlines()[0][:500]
        else:
            result.status, result.reason = (
                Status.CRASHED,
                f"{type(error).__name__}: {error}\n{traceback.format_exc()[-2000:]}",
            )
    return result
