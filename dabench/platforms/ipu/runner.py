"""PopTorch runner (Graphcore IPU): the decoder stack as a PopTorch training model.
Follows the PopTorch user guide (vendor-integrations.md section 1). Derivation: docs/vendors.md, "Graphcore IPU".
"""

from __future__ import annotations

import glob
import json
import os
import time
from typing import Any, Dict, List, Tuple

from dabench.platforms.ipu.export import export_file
from dabench.vendors.child import RunnerError, SyntheticTokens, build_model, main, option


def ipu_counts(strategy: str, degree: int, replicas: int) -> Tuple[int, int]:
    """(IPUs per replica, replicas) of a parallel layout: pp pipelines over ``degree`` IPUs, dp
    replicates ``degree`` times; none is one IPU (the backend refuses every other strategy first)."""
    return {"pp": (degree, replicas), "dp": (1, degree)}.get(strategy, (1, 1))


def begin_blocks(run_config: Dict[str, Any]) -> List[Tuple[str, int]]:
    """(layer name, IPU) where a BeginBlock starts: the first layer and every IPU change. With
    parallel=pp, ``parallel.layers_per_stage[k]`` decoder layers go to IPU k in order; the embedding
    and the head stay on IPU 0 (the Graphcore GPT-2 layout, e.g. layers_per_stage [0, 4, 4, 4])."""
    parallel, n_layers = run_config["parallel"], run_config["model"]["n_layers"]
    layers = (parallel.get("layers_per_stage") or []) if parallel.get("strategy") == "pp" else []
    stages = [stage for stage, count in enumerate(layers) for _ in range(count)] + [0] * n_layers
    placement = [("embedding", 0)] + [("block.%d" % b, stages[b]) for b in range(n_layers)] + [("head", 0)]
    return [(name, ipu) for i, (name, ipu) in enumerate(placement) if i == 0 or ipu != placement[i - 1][1]]


def profiling_env(run_config: Dict[str, Any], workdir: str) -> str:
    """The POPLAR_ENGINE_OPTIONS value for a profiled run ('' when profiling is off)."""
    if not option(run_config, "runner_profile", False):
        return ""
    execution = bool(option(run_config, "runner_profile_execution", False))
    return json.dumps(
        {
            "autoReport.outputGraphProfile": "true",
            "autoReport.outputExecutionProfile": "true" if execution else "false",
            "autoReport.executionProfileProgramRunCount": "2",
            "autoReport.directory": os.path.join(workdir, "popvision"),
            "debug.allowOutOfMemory": "true",
        }
    )


def _training_model(poptorch, stack):
    """The nn.Module whose forward returns the loss through poptorch.identity_loss."""
    import torch

    class DecoderTraining(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stack = stack

        def forward(self, ids, targets):
            return poptorch.identity_loss(self.stack(ids, targets), reduction="none")

    return DecoderTraining()


def _place(poptorch, stack, run_config: Dict[str, Any]) -> None:
    for name, ipu in begin_blocks(run_config):
        if name in ("embedding", "head"):
            setattr(stack, name, poptorch.BeginBlock(getattr(stack, name), user_id=name, ipu_id=ipu))
        else:
            index = int(name.split(".")[1])
            stack.blocks[index] = poptorch.BeginBlock(stack.blocks[index], user_id=name, ipu_id=ipu)


def _options(poptorch, torch, run_config: Dict[str, Any], ipus_per_replica: int, replicas: int, accumulation: int):
    opts = poptorch.Options()
    opts.deviceIterations(int(option(run_config, "device_iterations", 1)))
    opts.Training.gradientAccumulation(accumulation)
    opts.replicationFactor(replicas)
    if replicas > 1 or accumulation > 1:
        opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
    total = ipus_per_replica * replicas
    if total & (total - 1):
        opts.autoRoundNumIPUs(True)
    proportion = option(run_config, "available_memory_proportion")
    if proportion is not None:
        opts.setAvailableMemoryProportion({"IPU%d" % i: float(proportion) for i in range(ipus_per_replica)})
    if ipus_per_replica > 1:
        opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    precision = run_config["precision"]["name"]
    if precision in ("fp16", "mixed"):
        half = option(run_config, "half_partials", precision == "fp16")  # hardware.options.half_partials
        opts.Precision.setPartialsType(torch.half if half else torch.float)
    for key, switch_on in (("runner_ipu_model", opts.useIpuModel), ("runner_log_cycle_count", opts.logCycleCount)):
        if option(run_config, key, False):
            switch_on(True)
    if option(run_config, "runner_cache_dir"):
        opts.enableExecutableCaching(str(option(run_config, "runner_cache_dir")))
    return opts


def _optimizer(poptorch, torch, params, run_config: Dict[str, Any]):
    precision = run_config["precision"]["name"]
    kwargs = {"lr": run_config["run"]["lr"]}
    half, full = torch.half, torch.float
    if precision == "fp16":
        kwargs.update(
            eps=1e-4, accum_type=half, first_order_momentum_accum_type=half, second_order_momentum_accum_type=full
        )
    elif precision == "mixed":
        kwargs.update(accum_type=full, first_order_momentum_accum_type=full, second_order_momentum_accum_type=full)
    if option(run_config, "runner_loss_scaling") is not None:
        kwargs["loss_scaling"] = float(option(run_config, "runner_loss_scaling"))
    return poptorch.optim.AdamW(params, **kwargs)


def _classify_compile_error(error: Exception) -> RunnerError:
    text = "%s: %s" % (type(error).__name__, error)
    if "memory" in text.lower():
        return RunnerError("capacity", "PopTorch compile: the model does not fit in IPU tile memory: " + text[:2000])
    return RunnerError("compile_error", "PopTorch compile failed: " + text[:2000])


def run(request: Dict[str, Any]) -> Dict[str, Any]:
    rc, workdir = request["run_config"], request["workdir"]
    parallel = rc["parallel"]
    ipus_per_replica, replicas = ipu_counts(parallel["strategy"], parallel["degree"], parallel["replicas"])
    accumulation = rc["run"].get("grad_accum", 1)
    engine_options = profiling_env(rc, workdir)
    if engine_options:
        os.environ["POPLAR_ENGINE_OPTIONS"] = engine_options  # read by Poplar when the engine is built
    import poptorch
    import torch

    settings = rc["run"]
    device_iterations = int(option(rc, "device_iterations", 1))
    per_call = settings["batch_size"] * device_iterations * accumulation * replicas
    stack = build_model(rc["model"], settings["seed"])
    if rc["precision"]["name"] in ("fp16", "mixed"):
        stack.half()
    _place(poptorch, stack, rc)
    model = _training_model(poptorch, stack)
    opts = _options(poptorch, torch, rc, ipus_per_replica, replicas, accumulation)
    optimizer = _optimizer(poptorch, torch, model.parameters(), rc)
    calls = settings["warmup_steps"] + settings["timed_steps"]
    dataset = SyntheticTokens(rc["model"], per_call, per_call * (calls + 1), settings["seed"])
    loader = poptorch.DataLoader(opts, dataset, batch_size=settings["batch_size"], shuffle=False, drop_last=True)
    training = poptorch.trainingModel(model, options=opts, optimizer=optimizer)
    batches = iter(loader)
    example_ids, example_targets = next(batches)
    started = time.perf_counter()
    try:
        training.compile(example_ids, example_targets)
    except Exception as error:
        raise _classify_compile_error(error) from error
    compile_s = time.perf_counter() - started

    times, losses = [], []
    for call in range(calls):
        start = time.perf_counter()
        ids, targets = next(batches)
        loss = training(ids, targets)
        elapsed = time.perf_counter() - start
        losses.append(float(loss.float().mean()))
        if call >= settings["warmup_steps"]:
            times.append(elapsed)
    extra = {
        "ipu.device_iterations": float(device_iterations),
        "ipu.gradient_accumulation": float(accumulation),
        "ipu.replicas": float(replicas),
        "ipu.ipus_per_replica": float(ipus_per_replica),
        "loss.last": losses[-1],
    }
    if option(rc, "runner_log_cycle_count", False):
        extra["ipu.cycles_last_call"] = float(training.cycleCount())
    training.detachFromDevice()

    artifacts = []
    if engine_options:
        reports = sorted(glob.glob(os.path.join(workdir, "popvision", "**", "profile.pop"), recursive=True))
        training_reports = [r for r in reports if os.sep + "training" + os.sep in r] or reports
        if training_reports:
            out = os.path.join(workdir, "popvision.json")
            export_file(training_reports[0], out)
            artifacts.append(out)
    return {
        "step_times_s": times,
        "samples_per_step": per_call,
        "chips": ipus_per_replica * replicas,
        "compile_time_s": compile_s,
        "subtask_kind": "stage",
        "extra_metrics": extra,
        "artifact_paths": artifacts,
        "info": {
            "poptorch.version": getattr(poptorch, "__version__", "unknown"),
            "ipu.placement": json.dumps(begin_blocks(rc)),
        },
    }


if __name__ == "__main__":
    raise SystemExit(main(run))
