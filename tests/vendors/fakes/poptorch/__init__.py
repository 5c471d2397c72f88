"""A fake ``poptorch`` that records the calls dabench makes (tests only; see fake_recorder).

It mirrors the PopTorch API surface dabench uses and runs the wrapped model on the CPU so that
losses are real; it has no IPU semantics beyond counting samples per host call."""

import json
import os

import torch
from fake_recorder import misbehave_on_compile, record

__version__ = "0.0-fake"


class Error(RuntimeError):
    pass


def ipuHardwareIsAvailable(num_ipus=1):
    record("ipuHardwareIsAvailable", num_ipus)
    return os.environ.get("FAKE_SDK_BEHAVIOUR") != "no_devices"


class ReductionType:
    Mean = "Mean"
    Sum = "Sum"


class AutoStage:
    SameAsIpu = "SameAsIpu"
    AutoIncrement = "AutoIncrement"


class PipelinedExecution(object):
    def __init__(self, *args):
        record("PipelinedExecution", *args)
        self.args = args


class _Recorder(object):
    def __init__(self, prefix, owner):
        self._prefix, self._owner = prefix, owner

    def __getattr__(self, name):
        def method(*args, **kwargs):
            record(self._prefix + name, *args, **kwargs)
            self._owner.settings[self._prefix + name] = list(args)
            return self._owner

        return method


class Options(object):
    def __init__(self):
        record("Options")
        self.settings = {}
        self.Training = _Recorder("Training.", self)
        self.Precision = _Recorder("Precision.", self)

    def __getattr__(self, name):
        if name.startswith("_") or name in ("settings", "Training", "Precision"):
            raise AttributeError(name)
        return _Recorder("", self).__getattr__(name)

    def samples_per_call(self, micro):
        factor = 1
        for key in ("deviceIterations", "Training.gradientAccumulation", "replicationFactor"):
            factor *= self.settings.get(key, [1])[0]
        return micro * factor


class BeginBlock(torch.nn.Module):
    def __init__(self, module, user_id=None, ipu_id=None):
        super().__init__()
        record("BeginBlock", type(module).__name__, user_id=user_id, ipu_id=ipu_id)
        self.module, self.ipu_id = module, ipu_id

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


def identity_loss(loss, reduction):
    record("identity_loss", reduction=reduction)
    return loss


class DataLoader(torch.utils.data.DataLoader):
    def __init__(self, options, dataset, batch_size=1, **kwargs):
        record("DataLoader", batch_size=batch_size, **kwargs)
        super().__init__(dataset, batch_size=options.samples_per_call(batch_size), **kwargs)


class _Optim(object):
    def __init__(self, name):
        self._name = name

    def __call__(self, params, **kwargs):
        record("optim." + self._name, **kwargs)
        kept = {k: v for k, v in kwargs.items() if k in ("lr", "eps", "weight_decay")}
        return getattr(torch.optim, self._name)(params, **kept)


class optim:
    AdamW = _Optim("AdamW")
    Adam = _Optim("Adam")
    SGD = _Optim("SGD")


class _TrainingModel(object):
    def __init__(self, model, options, optimizer):
        self.model, self.options, self.optimizer = model, options, optimizer
        self.compiled = False

    def compile(self, *inputs):
        record("trainingModel.compile", [list(t.shape) for t in inputs])
        misbehave_on_compile(
            Error("Out of memory on tile 1234: 700000 bytes needed, 638976 available"),
            Error("poplar: graph construction failed: unsupported op"),
            batch=inputs[0].shape[0],
        )
        self._write_profile()
        self.compiled = True

    def _write_profile(self):
        options = os.environ.get("POPLAR_ENGINE_OPTIONS")
        if options:
            folder = os.path.join(json.loads(options)["autoReport.directory"], "training")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "profile.pop"), "w") as handle:
                handle.write("fake profile")

    def __call__(self, ids, targets):
        if not self.compiled:
            raise Error("fake poptorch: call compile() first (dabench compiles separately from timing)")
        record("trainingModel.__call__", list(ids.shape))
        loss = self.model(ids.long(), targets.long())
        loss.float().backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.detach()

    def cycleCount(self):
        record("cycleCount")
        return 12345

    def detachFromDevice(self):
        record("detachFromDevice")


def trainingModel(model, options=None, optimizer=None):
    record("trainingModel", type(model).__name__, param_dtype=str(next(model.parameters()).dtype))
    # the IPU would hold fp16 weights with fp32 partials/master state; the CPU stand-in computes in
    # fp32 so that the recorded losses stay finite
    return _TrainingModel(model.float(), options, optimizer)
