"""cerebras.pytorch (cstorch 2.x) runner: weight-streaming training on CSX, or the same code on
cstorch's CPU backend (``backend`` ``cstorch_cpu`` in the request).
Follows cstorch's documented flow (vendor-integrations.md section 2.1).
Derivation: docs/vendors.md, "Cerebras" and the ``hardware.options`` table.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Dict

from dabench.vendors.child import RunnerError, SyntheticTokens, build_model, main, option

HALF_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def input_fn(model_cfg: Dict[str, Any], global_batch: int, steps: int, seed: int):
    """A torch DataLoader of synthetic token batches (module-level: CSX workers re-import it)."""
    import torch

    dataset = SyntheticTokens(model_cfg, global_batch, global_batch * steps, seed)
    return torch.utils.data.DataLoader(dataset, batch_size=global_batch, drop_last=True, shuffle=False)


def half_dtype(run_config: Dict[str, Any]) -> str:
    """The cstorch half dtype: runner_half_dtype, else the precision's 16-bit type."""
    configured = option(run_config, "runner_half_dtype")
    if configured:
        return str(configured)
    precision = run_config["precision"]
    return HALF_DTYPES.get(precision["name"]) or HALF_DTYPES.get(precision.get("compute_dtype"), "bfloat16")


def num_csx(run_config: Dict[str, Any]) -> int:
    parallel = run_config["parallel"]
    default = parallel["degree"] if parallel.get("strategy") == "dp" else 1
    return int(option(run_config, "runner_num_csx", default))


def run(request: Dict[str, Any]) -> Dict[str, Any]:
    import cerebras.pytorch as cstorch
    import torch

    rc, workdir = request["run_config"], request["workdir"]
    on_cpu = request.get("backend") == "cstorch_cpu"
    model_cfg, settings = rc["model"], rc["run"]
    systems = 1 if on_cpu else num_csx(rc)  # the backends refuse layouts cstorch cannot run first
    global_batch = settings["batch_size"] * settings.get("grad_accum", 1) * systems
    artifact_dir = os.path.join(workdir, "cstorch")
    if on_cpu:
        backend = cstorch.backend("CPU", artifact_dir=artifact_dir)
    else:
        repo_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        mounts = {"mount_dirs": [repo_root, workdir], "python_paths": [repo_root]}
        cluster = cstorch.distributed.ClusterConfig(
            num_csx=systems, mgmt_address=option(rc, "runner_mgmt_address"), **mounts
        )
        compile_dir = option(rc, "runner_compile_dir", "dabench")
        compile_only = bool(option(rc, "runner_compile_only", False))
        backend = cstorch.backend(
            "CSX", artifact_dir=artifact_dir, compile_dir=compile_dir, compile_only=compile_only, cluster_config=cluster
        )
        micro_batch = option(rc, "runner_micro_batch_size", settings["batch_size"])
        cstorch.backends.csx.performance.micro_batch_size = micro_batch

    precision = rc["precision"]["name"]
    dtype_name = half_dtype(rc) if precision != "fp32" else None
    autocast = contextlib.nullcontext
    scaler = None
    if dtype_name:
        if on_cpu and dtype_name != "bfloat16":
            raise RunnerError(
                "unsupported",
                "cstorch's CPU backend supports mixed precision with bfloat16 only "
                "(precision=%s asks for %s); use precision=bf16 or mixed" % (precision, dtype_name),
            )
        cstorch.amp.enable_mixed_precision(True)
        cstorch.amp.set_half_dtype(dtype_name)
        autocast = cstorch.amp.autocast
        if dtype_name in ("float16", "cbfloat16"):
            scaler = cstorch.amp.GradScaler(loss_scale="dynamic")

    with backend.device:
        model = build_model(model_cfg, settings["seed"])
    compiled = cstorch.compile(model, backend)
    optimizer = cstorch.optim.AdamW(model.parameters(), lr=settings["lr"])

    @cstorch.trace
    def train_step(ids, targets):
        with autocast():
            loss = compiled(ids, targets)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()
        return loss

    marks = []

    @cstorch.step_closure
    def mark(loss):
        marks.append((time.perf_counter(), float(loss)))

    warmup = max(1, settings["warmup_steps"])
    steps = warmup + settings["timed_steps"]
    dataloader = cstorch.utils.data.DataLoader(input_fn, model_cfg, global_batch, steps, settings["seed"])
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=steps)
    started = time.perf_counter()
    for ids, targets in executor:
        mark(train_step(ids, targets))
    wall = time.perf_counter() - started
    if len(marks) != steps:
        raise RunnerError("crashed", "expected %d step closures, saw %d" % (steps, len(marks)))
    times = [b[0] - a[0] for a, b in zip(marks[warmup - 1 : -1], marks[warmup:])]
    losses = [m[1] for m in marks]
    if not all(l == l and abs(l) != float("inf") for l in losses):
        raise RunnerError("crashed", "non-finite loss during training: %r" % losses)
    extra = {"cstorch.first_step_s": marks[0][0] - started, "cstorch.loop_wall_s": wall, "loss.last": losses[-1]}
    return {
        "step_times_s": times,
        "samples_per_step": global_batch,
        "chips": systems,
        "extra_metrics": extra,
        "artifact_paths": [artifact_dir] if os.path.isdir(os.path.join(artifact_dir, "executors")) else [],
        "info": {
            "cstorch.version": cstorch.__version__,
            "cstorch.backend": "CPU" if on_cpu else "CSX",
            "cstorch.half_dtype": dtype_name or "none",
            "torch.version": torch.__version__,
        },
    }


if __name__ == "__main__":
    raise SystemExit(main(run))
