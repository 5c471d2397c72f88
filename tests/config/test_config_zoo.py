"""Every shipped config combination composes with Hydra and validates into a RunConfig, or is
refused with a ConfigError that names a real incompatibility."""

import itertools

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from dabench.config.build import build_run_config
from dabench.config.sections import RunConfig
from dabench.core.status import ConfigError
from tests.conftest import CONF

GROUPS = {
    group: sorted(p.stem for p in (CONF / group).glob("*.yaml"))
    for group in ("model", "hardware", "parallel", "precision")
}


def test_every_group_has_its_shipped_files():
    assert {"tiny", "gpt2_test", "gpt2_small", "gpt2_medium", "gpt2_large", "gpt2_xl", "llama_70b"} <= set(
        GROUPS["model"]
    )
    assert {"cpu", "cuda", "cuda_a100", "cuda_h100", "b200", "mi300x", "wse2", "wse3", "rdu", "sn40l", "ipu"} <= set(
        GROUPS["hardware"]
    )
    assert {"none", "dp", "tp", "pp"} <= set(GROUPS["parallel"])
    assert {"fp32", "fp16", "bf16", "mixed"} <= set(GROUPS["precision"])


@pytest.mark.slow
def test_every_combination_composes_and_validates():
    """Every model x hardware x parallel x precision validates. The model group interpolates
    nothing and nothing interpolates it, and the parallel group's section does not depend on the
    hardware (both checked below; hardware files read ${parallel} only to pick a default sweep,
    which writes hydra.sweeper, a section no RunConfig reads), so each model and each parallel
    section is composed once and swapped into each composed hardware x precision config: the same
    combinations at a fraction of the Hydra composes (the model group grows with every calibration workload)."""
    outcomes = {"valid": 0, "refused": 0}
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        models = {
            m: OmegaConf.to_container(compose("config", overrides=[f"model={m}"]), resolve=True)["model"]
            for m in GROUPS["model"]
        }
        for path in (CONF / "model").glob("*.yaml"):
            assert "${" not in path.read_text(), f"{path.name} interpolates: compose it with each combination"
        for path in CONF.rglob("*.yaml"):
            assert "${model" not in path.read_text(), f"{path} reads the model group: compose each combination"
        parallels = {p: _section(compose, "parallel", [f"parallel={p}"]) for p in GROUPS["parallel"]}
        bases = {}
        for hardware, precision in itertools.product(GROUPS["hardware"], GROUPS["precision"]):
            cfg = compose("config", overrides=[f"hardware={hardware}", f"precision={precision}"])
            bases[hardware, precision] = OmegaConf.to_container(cfg, resolve=True)
        for hardware in GROUPS["hardware"]:  # the parallel section is the same under every hardware
            assert _section(compose, "parallel", [f"hardware={hardware}", "parallel=pp"]) == parallels["pp"], hardware
        for path in CONF.rglob("*.yaml"):
            assert "${hardware" not in path.read_text() or path.parent.name == "precision", f"{path} reads hardware"
        for model, hardware, parallel, precision in itertools.product(*GROUPS.values()):
            container = {**bases[hardware, precision], "model": models[model], "parallel": parallels[parallel]}
            try:
                rc = build_run_config(container)
            except ConfigError as error:
                outcomes["refused"] += 1
                # the only refusals the shipped files may produce: a precision the hardware lacks,
                # or a tensor-parallel degree that does not divide the heads
                assert error.field in ("precision", "parallel.degree"), (model, hardware, parallel, precision, error)
                continue
            outcomes["valid"] += 1
            assert isinstance(rc, RunConfig)
            assert rc.model.hidden_size % rc.model.n_heads == 0
            assert rc.precision.name in rc.hardware.precisions
            if rc.parallel.strategy == "pp":
                assert sum(rc.parallel.layers_per_stage) == rc.model.n_layers
    assert outcomes["valid"] > outcomes["refused"] > 0


@pytest.mark.parametrize("hardware", GROUPS["hardware"])
def test_every_hardware_spec_has_the_required_data(hardware):
    rc = build_run_config(_compose([f"hardware={hardware}", "precision=mixed"]))
    spec = rc.hardware
    assert spec.memory and spec.compute_units
    assert spec.mode in ("auto", "measure", "predict", "validate")
    for precision in spec.precisions:
        assert precision in spec.peak_flops, f"{hardware} lists {precision} but no peak FLOP/s entry"


def test_every_hardware_number_has_a_source_comment():
    for path in (CONF / "hardware").glob("*.yaml"):
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if (
                "_Bps:" in stripped
                or "capacity_bytes:" in stripped
                or stripped.startswith(("fp32:", "fp16:", "bf16:", "mixed:"))
            ) and "null" not in stripped:
                assert "#" in stripped, f"{path.name}: number without a source comment: {stripped}"


def _section(compose, name, overrides):
    return OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)[name]


def _compose(overrides):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)
