"""Fake ``sambaflow.samba``: tensors are torch tensors, the "RDU" is the CPU; ``session.compile``
writes a small compile folder in SambaFlow's report formats (two sections with two stages each)."""

import json
import os

import torch
from fake_recorder import misbehave_on_compile, record

from . import optim  # noqa: F401


class SambaCompileError(RuntimeError):
    pass


def from_torch_model_(model):
    record("from_torch_model_", type(model).__name__)
    return model


def randint(high, size, name=None, batch_dim=None):
    record("randint", high, list(size), name=name, batch_dim=batch_dim)
    return torch.randint(0, high, tuple(size))


def randn(*size, name=None, batch_dim=None):
    record("randn", list(size), name=name, batch_dim=batch_dim)
    return torch.randn(*size)


def from_torch_tensor(tensor, name=None, batch_dim=None):
    record("from_torch_tensor", list(tensor.shape), name=name, batch_dim=batch_dim)
    return tensor


def to_torch(tensor):
    record("to_torch")
    return tensor


#: stage latencies (cycles) per section written by the fake compiler
FAKE_STAGE_LATENCIES = {0: [100, 300], 1: [200, 200]}
FAKE_SECTION_UNITS = {0: (10, 30), 1: (20, 50)}  # (pcus, pmus)


def _write_compile_folder(folder, name):
    os.makedirs(os.path.join(folder, "stage_buffers"), exist_ok=True)
    with open(os.path.join(folder, name + ".pef"), "w") as handle:
        handle.write("fake pef")
    for section, (pcus, pmus) in FAKE_SECTION_UNITS.items():
        report = {
            "available": {"chips": 1, "fcmus": 640, "sections": len(FAKE_SECTION_UNITS), "tiles": 4},
            "partitions": {
                "{0, %d}" % section: {
                    "pcus": {"count": pcus, "utilization": pcus / 6.4},
                    "pmus": {"count": pmus, "utilization": pmus / 6.4},
                }
            },
            "templates": {
                "%s.partition_0_%d_.t0" % (name, section): {
                    "chip_id": 0,
                    "partition": "{0, %d}" % section,
                    "pcus": pcus,
                    "pmus": pmus,
                    "section_id": section,
                }
            },
            "used": {"total": {"pcus": pcus, "pmus": pmus, "units": pcus + pmus}},
        }
        with open(os.path.join(folder, "%s.s%d.utilization_report.json" % (name, section)), "w") as handle:
            json.dump(report, handle)
        stages = [
            {
                "chip_id": 0,
                "section_id": section,
                "stage_id": i,
                "prism_stage_latency": latency,
                "template_info": [{"name": "op%d" % i, "pcu_count": pcus // 2, "pmu_count": pmus // 2}],
            }
            for i, latency in enumerate(FAKE_STAGE_LATENCIES[section])
        ]
        with open(os.path.join(folder, "stage_buffers", "stage_info_%d_0.json" % section), "w") as handle:
            json.dump(stages, handle)


class _Session(object):
    def __init__(self):
        self.model = self.optimizer = None

    def compile(self, model, inputs, optimizer, name=None, app_dir=None, config_dict=None, pef_metadata=None):
        record(
            "session.compile",
            name=name,
            input_shapes=[list(t.shape) for t in inputs],
            config_dict={k: v for k, v in (config_dict or {}).items()},
            pef_metadata=pef_metadata,
        )
        misbehave_on_compile(
            SambaCompileError("Out of memory: section does not fit in PMU memory"),
            SambaCompileError("Unsupported operator aten::foo"),
            batch=inputs[0].shape[0],
        )
        _write_compile_folder(os.path.join(config_dict["output_folder"], name), name)

    def run(self, input_tensors=None, output_tensors=None, hyperparam_dict=None, **kwargs):
        record("session.run", [list(t.shape) for t in input_tensors], hyperparam_dict=hyperparam_dict, **kwargs)
        loss, _ = self.model(*input_tensors)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return [loss.detach()]

    def to_cpu(self, model):
        record("session.to_cpu")


session = _Session()
