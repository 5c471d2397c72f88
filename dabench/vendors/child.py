"""The child side of runner isolation: read the request, run, write the result.

Runs inside a vendor SDK's interpreter (Python 3.8+, torch 2.0-2.4, old numpy), so this package
imports only the standard library, torch (lazily) and :mod:`dabench.workload.model`; no Hydra,
MLflow, numpy or other dabench modules. No ``X | Y`` annotations at run time, no ``match``.

Request and result formats: :mod:`dabench.runtime.isolation`.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any, Callable, Dict, List

PROTOCOL = 1


class RunnerError(Exception):
    """An outcome other than ok: ``status`` is a dabench.core.status.Status value (compile_error,
    capacity, oom, unsupported, crashed, invalid_config)."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def write_json(path: str, data: Dict[str, Any]) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a result."""
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle, indent=1, default=str)
    os.replace(tmp, path)


def main(run: Callable[[Dict[str, Any]], Dict[str, Any]], argv: List[str] = None) -> int:
    """``python -m dabench.vendors.<x> request.json result.json``: call ``run(request)`` and
    write its result (status ok) or the failure (status and reason)."""
    argv = sys.argv if argv is None else argv
    if len(argv) != 3:
        print("usage: python -m dabench.vendors.<runner> request.json result.json", file=sys.stderr)
        return 2
    with open(argv[1]) as handle:
        request = json.load(handle)
    if request.get("protocol") != PROTOCOL:
        result = {
            "status": "crashed",
            "reason": "protocol mismatch: request %r, runner %r" % (request.get("protocol"), PROTOCOL),
        }
    else:
        started = time.perf_counter()
        try:
            result = run(request)
            result.setdefault("status", "ok")
        except RunnerError as error:
            result = {"status": error.status, "reason": error.reason}
        except Exception as error:  # recorded as crashed with the traceback
            result = {
                "status": "crashed",
                "reason": "%s: %s\n%s" % (type(error).__name__, error, traceback.format_exc()[-3000:]),
            }
        result["runner_wall_s"] = time.perf_counter() - started
    result.update(protocol=PROTOCOL, python=sys.executable, python_version=sys.version.split()[0])
    write_json(argv[2], result)
    return 0


def build_model(model_cfg: Dict[str, Any], seed: int):
    """The seeded DecoderStack of a ``run_config["model"]`` dict."""
    import torch

    from dabench.workload.model import DecoderStack

    torch.manual_seed(seed)
    return DecoderStack(
        model_cfg["n_layers"],
        model_cfg["hidden_size"],
        model_cfg["n_heads"],
        model_cfg["seq_len"],
        model_cfg["vocab_size"],
        model_cfg.get("ffn_mult", 4),
        tie_embeddings=bool(model_cfg.get("tie_embeddings", False)),
        n_kv_heads=model_cfg.get("n_kv_heads"),
    )


class SyntheticTokens(object):
    """A map-style dataset of ``length`` (ids, targets) pairs that repeats one seeded block of
    ``block`` random sequences, so memory stays small however many steps run."""

    def __init__(self, model_cfg: Dict[str, Any], block: int, length: int, seed: int):
        from dabench.workload.model import synthetic_batch

        self.ids, self.targets = synthetic_batch(block, model_cfg["seq_len"], model_cfg["vocab_size"], seed)
        self.block, self.length = block, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        i = index % self.block
        return self.ids[i], self.targets[i]


def option(run_config: Dict[str, Any], key: str, default: Any = None) -> Any:
    """``hardware.options[key]`` (runner knobs are prefixed ``runner_``)."""
    value = (run_config["hardware"].get("options") or {}).get(key)
    return default if value is None else value
