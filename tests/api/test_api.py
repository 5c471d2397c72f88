"""dabench.api: overrides -> Result through the one pipeline, without torch on the predict path."""

import subprocess
import sys

from dabench import api
from dabench.config.paths import CONF_DIR
from dabench.core.status import Status


def test_predict_returns_a_typed_result():
    r = api.predict(["hardware=wse2", "model=gpt2_test", "tracking.enabled=false"])
    assert r.mode == "predict" and r.status in (Status.OK, Status.CAPACITY)
    assert r.config["hardware"]["mode"] == "predict" and r.run_config.hardware.arch == "wse2"
    if r.ok:
        assert r.metrics["throughput.samples_per_s"] > 0 and r.diagnosis


def test_bad_input_is_a_result():
    assert api.predict(["hardware=no_such_hardware"]).status is Status.INVALID_CONFIG
    r = api.predict(["hardware=ipu", "parallel=pp", "parallel.placement='0 x'"])
    assert r.status is Status.INVALID_CONFIG and "parallel.placement" in r.reason


def test_predict_matches_the_pipeline():
    from dabench.config.build import build_run_config
    from dabench.predictor import predict

    r = api.predict(["hardware=rdu", "model=gpt2_test"])
    direct = predict(build_run_config(r.config))
    bands = {k for k in r.metrics if k.endswith((".lo", ".hi"))}  # the run's band (fit/constant_set.py)
    assert {k: v for k, v in r.metrics.items() if k not in bands} == direct.metrics
    assert {"throughput.samples_per_s.lo", "throughput.samples_per_s.hi"} <= bands


def test_import_is_cheap_and_predict_needs_no_torch():
    code = (
        "import sys, dabench; assert 'hydra' not in sys.modules and 'mlflow' not in sys.modules;"
        "r = dabench.predict(['hardware=ipu', 'model=gpt2_test', 'parallel=pp', 'run.grad_accum=64']);"
        "print(r.status.value, 'torch' in sys.modules, 'mlflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/tmp")
    assert out.returncode == 0, out.stderr
    status, torch_loaded, mlflow_loaded = out.stdout.split()
    assert (torch_loaded, mlflow_loaded) == ("False", "False")


def test_compose_leaves_global_hydra_as_it_found_it():
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    api.compose(["model=tiny"])
    assert not GlobalHydra.instance().is_initialized()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        mine = GlobalHydra.instance().hydra
        assert api.compose(["model=gpt2_test"])["model"]["name"] == "gpt2_test"
        assert GlobalHydra.instance().hydra is mine
        assert compose(config_name="config")["model"]["name"] == "tiny"
