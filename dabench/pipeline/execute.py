"""The one pipeline: RunConfig -> op graph -> backend and/or analytical model -> metrics.

:func:`execute` runs one configuration start to end, without MLflow: resolve the mode, measure
and/or predict, compute the metrics and the diagnosis. Every outcome becomes a
:class:`RunResult` with a status; nothing there raises for a failed run (a failure is a result).
:func:`predict_config` is its predict-only core, for callers that evaluate thousands of
configurations in-process (the tuner's direct evaluator, the tests, benchmarks/perfmodel_speed.py);
it raises :class:`~dabench.core.status.DabenchError` for a refused configuration. Nothing else in
dabench assembles config -> op graph -> model -> metrics (dabench/api.py and the Hydra task call
these two). torch is imported only when a backend measures.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, replace

from dabench.backends import Backend, get_backend
from dabench.config.sections import RunConfig
from dabench.host.ceilings import host_cpu_ceilings, in_situ_ceilings, is_calibrated, resolve_ceilings, uses_in_situ_ceilings
from dabench.metrics.checks import check_result, without_ceiling_metrics
from dabench.metrics.summary import Ceilings, compute_metrics, diagnosis, roofline_points
from dabench.perfmodel import PREDICTORS, get_predictor
from dabench.core.profile import Profile
from dabench.core.result import RunResult
from dabench.core.status import DabenchError, Diverged, InvalidResult, Status, UnsupportedError
from dabench.workload.opgraph import OpGraph, build_opgraph

log = logging.getLogger(__name__)

#: metrics compared between measurement and prediction in validate mode
VALIDATED_METRICS = ("throughput.samples_per_s", "step_time.median_s", "tier1.compute_efficiency",
                     "tier2.comm_time_s")


_AUTO_WARNED: set[tuple[str, str]] = set()  #: (hardware, note) already warned in this process


def resolve_mode(rc: RunConfig) -> tuple[str, str]:
    """(mode, note). ``auto`` measures when the backend is available and otherwise predicts,
    saying so; ``measure``/``validate`` without the device raise UnsupportedError naming what is
    missing; ``predict`` needs an analytical model for the architecture."""
    requested = rc.hardware.mode
    has_model = rc.hardware.arch in PREDICTORS
    if requested == "predict":
        if not has_model:
            raise UnsupportedError(f"hardware.mode=predict: no analytical model for arch {rc.hardware.arch!r} yet")
        return "predict", ""
    availability = get_backend(rc.hardware.backend).availability(rc)
    if requested in ("measure", "validate"):
        if not availability.ok:
            raise UnsupportedError(f"hardware.mode={requested} on hardware={rc.hardware.name}: {availability.reason}")
        if requested == "validate" and not has_model:
            raise UnsupportedError(f"hardware.mode=validate: no analytical model for arch {rc.hardware.arch!r} yet")
        return requested, ""
    if availability.ok:
        return "measure", ""
    if has_model:
        note = f"PREDICTED, not measured: {availability.reason}"
        first = (rc.hardware.name, note) not in _AUTO_WARNED  # once per process: a sweep repeats it per job
        _AUTO_WARNED.add((rc.hardware.name, note))
        log.log(logging.WARNING if first else logging.DEBUG, "hardware.mode=auto on %s: %s", rc.hardware.name, note)
        return "predict", note
    raise UnsupportedError(f"hardware={rc.hardware.name}: cannot measure ({availability.reason}) and no "
                           f"analytical model exists for arch {rc.hardware.arch!r} yet")


@dataclass
class Prediction:
    """What :func:`predict_config` hands on."""

    profile: Profile
    graph: OpGraph
    ceilings: Ceilings
    metrics: dict[str, float]


def predict_config(rc: RunConfig, graph: OpGraph | None = None, ceilings: Ceilings | None = None,
                   model_ceilings: Ceilings | None = None) -> Prediction:
    """config -> op graph -> analytical model -> Tier-1/2 metrics. ``graph`` and ``ceilings`` may
    be passed when the caller caches them (they depend only on model, micro-batch, precision and
    hardware). ``model_ceilings``: what a roofline predictor (CPU/GPU) prices the ops at, when it
    differs from the ``ceilings`` the metrics are taken against (validate mode's in-situ probes).
    Raises DabenchError (capacity, unsupported, ...) when the model refuses."""
    if graph is None:
        graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
    if ceilings is None:
        ceilings = resolve_ceilings(rc.hardware, rc.precision)
    predictor = get_predictor(rc.hardware.arch)
    if getattr(predictor, "takes_ceilings", False):
        profile = predictor(rc, graph, model_ceilings or ceilings)
    else:
        profile = predictor(rc, graph)
    metrics = compute_metrics(profile, graph, ceilings, rc.data_copies)
    # the metric part of the result check (the step's roof share included); execute() also checks
    # every per-class roofline point of the run it records (kept off this hot path: ~65 us)
    failure = check_result(metrics)
    if failure is not None:  # a prediction that breaks a bound is a model bug, never a result
        raise (Diverged if failure.status is Status.DIVERGED else InvalidResult)(failure.reason)
    return Prediction(profile, graph, ceilings, metrics)


def measured_points_bound(points: list, ceilings: Ceilings, notes: dict[str, str]) -> list:
    """A measured op class's roofline points as the result check must judge them. Its memory
    roof is the main memory's (DRAM on a CPU), but a class whose working set stays in cache can
    run above it for real (the token + position gather of a small model, the loss over a small
    vocabulary): only the compute roof (peak FLOP/s) bounds a measurement. Classes above the
    memory roof are named in ``notes['dabench.roofline_note']``, never hidden; a predicted point
    is still held to its full roof (a model above its own roof is a bug)."""
    above = [p.name for p in points if p.achieved is not None and p.achieved > p.attainable * 1.0001]
    if above:
        notes["dabench.roofline_note"] = (f"measured op classes above the {ceilings.memory_level} roof (a working set "
                                          f"served from cache): {', '.join(above)}")
    return [replace(p, attainable=ceilings.peak_flops) for p in points]


def measure(backend: Backend, rc: RunConfig, graph: OpGraph) -> Profile:
    """Measure on ``backend``; a parallel run of a torch backend goes to torch.distributed ranks
    (dabench.distributed). In validate mode, a parallel run's measured collectives are priced
    with the link model too (:mod:`dabench.perfmodel.comm_check`)."""
    if rc.parallel.strategy != "none" and backend.torch_distributed:
        from dabench.distributed import run_parallel

        device, source = backend.parallel_target(rc)
        profile = run_parallel(rc, device, source)
        if rc.hardware.mode == "validate":
            from dabench.perfmodel.comm_check import comm_prediction_metrics

            profile.extra_metrics.update(comm_prediction_metrics(rc, profile.comm, profile.extra_metrics))
        return profile
    return backend.run(rc, graph)


def _measure_with_probes(rc: RunConfig, graph: OpGraph, ceilings: Ceilings):
    """Measure with the CPU's ceilings probed right before and right after the timed window
    (:data:`dabench.backends.measure.TIMED_WINDOW_HOOK`); returns the profile (with the probes'
    ``validate.*`` metrics) and the model's and the roof's ceilings
    (:func:`dabench.host.ceilings.in_situ_ceilings`)."""
    from dabench.backends.measure import TIMED_WINDOW_HOOK
    from dabench.host.calibrate import probe

    probes = []
    token = TIMED_WINDOW_HOOK.set(lambda when: probes.append(probe(rc.precision.compute_dtype)))
    try:
        profile = measure(get_backend(rc.hardware.backend)(), rc, graph)
    finally:
        TIMED_WINDOW_HOOK.reset(token)
    if len(probes) != 2:  # a backend without a timed window of its own: the cached calibration stays
        return profile, None, ceilings
    model_ceilings, roof, probed = in_situ_ceilings(ceilings, *probes)
    profile.extra_metrics.update(probed)
    return profile, model_ceilings, roof


def _rel_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured."""
    return (predicted - measured) / measured if measured else float("nan")


def execute(rc: RunConfig) -> RunResult:
    """Run one configuration and return its result; never raises for a failed run."""
    mode = rc.hardware.mode if rc.hardware.mode != "auto" else "measure"
    result = RunResult(Status.OK, "", mode, run_config=rc)
    try:
        result.mode, note = resolve_mode(rc)
        if note:
            result.notes["dabench.mode_note"] = note
        if rc.hardware.arch == "cpu" and rc.run.threads:
            import torch

            torch.set_num_threads(rc.run.threads)
        result.graph = graph = build_opgraph(rc.model, rc.run.batch_size, rc.precision)
        model_ceilings = None  # the model's own ceilings when they differ (validate mode's in-situ probes)
        result.ceilings = ceilings = resolve_ceilings(rc.hardware, rc.precision)
        if result.mode in ("measure", "validate"):
            backend = get_backend(rc.hardware.backend)
            if backend.runs_on_host_cpu and rc.hardware.arch != "cpu":
                result.ceilings = ceilings = host_cpu_ceilings(rc.precision)
                result.notes["dabench.ceilings_note"] = (f"backend {backend.name} runs on this machine's CPU: "
                                                         f"efficiencies are against the calibrated CPU, not {rc.hardware.name}")
            # a machine too busy to calibrate stays unpredicted (the reason is recorded below)
            in_situ = uses_in_situ_ceilings(rc.hardware, result.mode, rc.parallel.strategy) and is_calibrated(ceilings)
            if in_situ:  # the machine's speed drifts: compare the run with ceilings probed around its timed window
                result.profile, model_ceilings, ceilings = _measure_with_probes(rc, graph, ceilings)
                result.ceilings = ceilings
            else:
                result.profile = measure(get_backend(rc.hardware.backend)(), rc, graph)
        if result.mode in ("predict", "validate"):  # which model, and how far its calibration points miss
            from dabench.perfmodel.fit import run_tags as model_tags

            result.notes.update(model_tags(rc.hardware.arch))
        prediction = predict_config(rc, graph, ceilings, model_ceilings) if result.mode in ("predict", "validate") else None
        if prediction is not None:
            result.predicted = prediction.profile
        if result.profile is None:
            result.metrics = prediction.metrics
        else:
            result.metrics = compute_metrics(result.profile, graph, ceilings, rc.data_copies)
        main = result.profile if result.profile is not None else result.predicted
        calibrated = is_calibrated(ceilings)  # False: CPU calibration refused (busy), none cached
        result.diagnosis = (diagnosis(main, graph, ceilings, result.metrics, rc.data_copies) if calibrated
                            else ("undiagnosed", f"no hardware ceilings: {ceilings.source}"))
        if result.mode == "validate":
            predicted_metrics = prediction.metrics
            for name in VALIDATED_METRICS:
                if name in predicted_metrics and name in result.metrics:
                    result.metrics[f"predict.{name}"] = predicted_metrics[name]
                    short = name.split(".", 1)[1] if name.startswith("throughput.") else name.replace(".", "_")
                    result.metrics[f"predict.rel_error.{short}"] = _rel_error(predicted_metrics[name], result.metrics[name])
        if not calibrated:  # record no number relative to a ceiling rather than a guessed one
            result.metrics = without_ceiling_metrics(result.metrics)
            result.notes["dabench.ceilings_note"] = f"efficiency and roofline metrics absent: {ceilings.source}"
        # the result check before anything is recorded (dabench/metrics/checks.py): never clamped
        points = [] if result.predicted is None or not calibrated else \
            roofline_points(graph, result.predicted, ceilings, rc.data_copies)
        if result.profile is not None and calibrated:
            points += measured_points_bound(roofline_points(graph, result.profile, ceilings, rc.data_copies),
                                            ceilings, result.notes)
        failure = check_result(result.metrics, points)
        if failure is not None:
            result.status, result.reason = failure.status, failure.reason
    except DabenchError as error:
        result.status, result.reason = error.status, error.reason
    except Exception as error:  # a failure is a result: record it, let the sweep go on
        if type(error).__name__ == "OutOfMemoryError" or isinstance(error, MemoryError):
            result.status, result.reason = Status.OOM, str(error).splitlines()[0][:500]
        else:
            result.status = Status.CRASHED
            result.reason = f"{type(error).__name__}: {error}\n{traceback.format_exc()[-2000:]}"
    return result
