"""Shared by the fake SDK modules: record each API call as a JSON line in $FAKE_SDK_LOG, and
misbehave on request ($FAKE_SDK_BEHAVIOUR: kill_on_compile, hang_on_compile, oom_on_compile,
fail_compile, no_devices) so tests can check how dabench survives it. With $FAKE_SDK_BEHAVIOUR_BATCH
set, compile misbehaves only when the compiled batch (first input dimension) equals it, so one job
of a sweep can fail while the others run."""

import json
import os
import signal
import time


def _plain(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    name = getattr(value, "__name__", None)
    return name if isinstance(name, str) else repr(value)[:80]


def record(call, *args, **kwargs):
    path = os.environ.get("FAKE_SDK_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps({"call": call, "args": _plain(list(args)), "kwargs": _plain(kwargs)}) + "\n")


def behaviour():
    return os.environ.get("FAKE_SDK_BEHAVIOUR", "")


def misbehave_on_compile(oom_error, compile_error, batch=None):
    only = os.environ.get("FAKE_SDK_BEHAVIOUR_BATCH")
    if only and batch is not None and int(only) != batch:
        return
    mode = behaviour()
    if mode == "kill_on_compile":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang_on_compile":
        time.sleep(3600)
    if mode == "oom_on_compile":
        raise oom_error
    if mode == "fail_compile":
        raise compile_error
