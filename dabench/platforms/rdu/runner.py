"""SambaFlow runner (SambaNova SN30 RDU), following the SambaFlow "bare-metal" app shape
(vendor-integrations.md section 3.1).
Two phases, one process each: ``compile`` and ``run``. Derivation: docs/vendors.md, "SambaNova".
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List

from dabench.vendors.child import RunnerError, build_model, main, option

COMPILE_MODES = ("o0", "o1", "o3")


def compile_args(run_config: Dict[str, Any], output_folder: str, pef_name: str) -> List[str]:
    """The SambaFlow app CLI for the compile phase (see module doc)."""
    settings, parallel = run_config["run"], run_config["parallel"]
    mode = str(option(run_config, "compile_mode", "o1"))
    if mode not in COMPILE_MODES:
        raise RunnerError(
            "invalid_config", "hardware.options.compile_mode=%r: must be one of %s" % (mode, ", ".join(COMPILE_MODES))
        )
    args = ["compile", "-b", str(settings["batch_size"]), "--pef-name", pef_name, "--output-folder", output_folder]
    args += ["--num-tiles", str(option(run_config, "tiles", 4)), "-" + mode]
    if parallel.get("strategy") == "tp":
        tp_mode = str(option(run_config, "runner_tensor_parallel", "weight"))
        args += ["--n-chips", str(parallel["degree"]), "--tensor-parallel", tp_mode]
    if run_config["precision"]["name"] == "mixed":
        args += ["--enable-mixed-precision-ops", "gemm", "softmax"]
    return args


def run_args(pef: str) -> List[str]:
    return ["run", "--pef", pef]


def _wrap(stack):
    import torch

    class SambaDecoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stack = stack

        def forward(self, ids, targets):
            loss = self.stack(ids, targets)
            return loss, loss

    return SambaDecoder()


def _setup(rc: Dict[str, Any]):
    import sambaflow.samba as samba
    import torch

    stack = build_model(rc["model"], rc["run"]["seed"])  # fp16 is refused by the backend first
    if rc["precision"]["name"] == "bf16":
        stack = stack.bfloat16()
    model = _wrap(stack)
    samba.from_torch_model_(model)
    optimizer = samba.optim.AdamW(model.parameters(), lr=rc["run"]["lr"])
    batch, seq, vocab = rc["run"]["batch_size"], rc["model"]["seq_len"], rc["model"]["vocab_size"]
    ids = samba.randint(vocab, (batch, seq), name="ids", batch_dim=0)
    targets = samba.randint(vocab, (batch, seq), name="targets", batch_dim=0)
    return torch, samba, model, optimizer, [ids, targets]


def compile_phase(request: Dict[str, Any]) -> Dict[str, Any]:
    from sambaflow.samba.utils.argparser import parse_app_args
    from sambaflow.samba.utils.pef_utils import get_pefmeta

    rc, workdir = request["run_config"], request["workdir"]
    output_folder, pef_name = os.path.join(workdir, "pef"), "dabench_%s" % rc["model"]["name"]
    argv = compile_args(rc, output_folder, pef_name)
    args = parse_app_args(argv=argv)
    _, samba, model, optimizer, inputs = _setup(rc)
    started = time.perf_counter()
    try:
        meta = get_pefmeta(args, model)
        samba.session.compile(
            model, inputs, optimizer, name=pef_name, app_dir=workdir, config_dict=vars(args), pef_metadata=meta
        )
    except Exception as error:
        text = "%s: %s" % (type(error).__name__, error)
        capacity = any(w in text.lower() for w in ("memory", "does not fit", "out of resources"))
        raise RunnerError(
            "capacity" if capacity else "compile_error", "SambaFlow compile failed: " + text[:2000]
        ) from None
    folder = os.path.join(output_folder, pef_name)
    return {
        "compile_time_s": time.perf_counter() - started,
        "pef": os.path.join(folder, pef_name + ".pef"),
        "compile_folder": folder,
        "argv": argv,
    }


def run_phase(request: Dict[str, Any]) -> Dict[str, Any]:
    from sambaflow.samba.utils import trace_graph
    from sambaflow.samba.utils.argparser import parse_app_args

    rc, pef = request["run_config"], request["pef"]
    args = parse_app_args(argv=run_args(pef))
    torch, samba, model, optimizer, inputs = _setup(rc)
    traced = trace_graph(model, inputs, optimizer, pef=pef, mapping=getattr(args, "mapping", None))
    settings = rc["run"]
    hyper = {"lr": settings["lr"]}
    times, run_s, sync_s, losses = [], [], [], []
    for step in range(settings["warmup_steps"] + settings["timed_steps"]):
        start = time.perf_counter()
        outputs = samba.session.run(input_tensors=inputs, output_tensors=traced, hyperparam_dict=hyper)
        after_run = time.perf_counter()
        loss = samba.to_torch(outputs[0])
        end = time.perf_counter()
        losses.append(float(torch.as_tensor(loss).float().mean()))
        if step >= settings["warmup_steps"]:
            times.append(end - start)
            run_s.append(after_run - start)
            sync_s.append(end - after_run)
    samba.session.to_cpu(model)
    mean = lambda values: sum(values) / len(values)
    return {
        "step_times_s": times,
        "samples_per_step": settings["batch_size"],
        "extra_metrics": {"rdu.session_run_s": mean(run_s), "rdu.to_torch_s": mean(sync_s), "loss.last": losses[-1]},
        "argv": run_args(pef),
    }


def run(request: Dict[str, Any]) -> Dict[str, Any]:
    phase = {"compile": compile_phase, "run": run_phase}.get(request.get("phase"))
    if phase is None:
        raise RunnerError("crashed", "unknown phase %r (compile | run)" % request.get("phase"))
    return phase(request)


if __name__ == "__main__":
    raise SystemExit(main(run))
