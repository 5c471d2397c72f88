"""A stand-in runner for protocol tests (stdlib only, starts fast): ``request["behaviour"]``
selects ok, exit_nonzero, kill_self, hang, garbled, no_result, report_compile_error,
report_capacity, spawn_sleeper_and_hang."""

import json
import os
import signal
import subprocess
import sys
import time


def main():
    request_path, result_path = sys.argv[1], sys.argv[2]
    with open(request_path) as handle:
        request = json.load(handle)
    behaviour = request.get("behaviour", "ok")
    print("fake child starting: %s" % behaviour, flush=True)
    result = {"protocol": request["protocol"], "status": "ok", "step_times_s": [0.5, 0.25], "samples_per_step": 8}
    if behaviour == "exit_nonzero":
        print("something went wrong in the SDK", file=sys.stderr, flush=True)
        sys.exit(3)
    if behaviour == "kill_self":
        os.kill(os.getpid(), signal.SIGKILL)
    if behaviour == "hang":
        time.sleep(3600)
    if behaviour == "spawn_sleeper_and_hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(os.path.join(request["workdir"], "grandchild.pid"), "w") as handle:
            handle.write(str(child.pid))
        time.sleep(3600)
    if behaviour == "garbled":
        with open(result_path, "w") as handle:
            handle.write("{not json")
        return
    if behaviour == "no_result":
        return
    if behaviour == "report_compile_error":
        result = {"protocol": request["protocol"], "status": "compile_error", "reason": "the compiler said no"}
    if behaviour == "report_capacity":
        result = {"protocol": request["protocol"], "status": "capacity", "reason": "needs 2 GB of SRAM, has 0.9 GB"}
    with open(result_path, "w") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
