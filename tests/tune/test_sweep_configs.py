"""Every shipped sweep composes, its search space parses, and every deployment its structured
space proposes is a valid RunConfig (valid by construction)."""

from pathlib import Path

import optuna
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from dabench.config.build import build_run_config
from dabench.config.compose import compose as compose_config
from dabench.platforms.ipu.space import IpuPipelineSpace, training_pipeline_stages
from dabench.tune.driver import TrialSpace
from dabench.tune.space import override_value, params_to_overrides, parse_overrides
from dabench.tune.structured import load_space

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
SWEEPS = sorted(p.stem for p in (ROOT / "sweeps").glob("*.yaml"))
optuna.logging.set_verbosity(optuna.logging.WARNING)


def compose_sweep(name, overrides=()):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("config", overrides=[f"+sweeps={name}", *overrides], return_hydra_config=True)
    task = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in cfg if k != "hydra"}
    return task, OmegaConf.to_container(cfg.hydra.sweeper, resolve=True)


def test_the_four_targets_are_shipped():
    assert {"cpu_deploy", "ipu_deploy", "rdu_deploy", "wse2_deploy"} <= set(SWEEPS)


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep_composes_and_every_proposal_is_a_valid_run_config(name):
    text = (ROOT / "sweeps" / f"{name}.yaml").read_text()
    assert f"python -m dabench +sweeps={name}" in text  # documented at its top with its command
    task, sweeper = compose_sweep(name)
    assert sweeper["_target_"].endswith("DabenchOptunaSweeper") and sweeper["sweep_name"] == name
    parsed = parse_overrides(params_to_overrides(sweeper["params"]))
    assert parsed.dimensions
    space = sweeper.get("space") or {}
    structured = load_space(space["hook"], task, space.get("args")) if space.get("hook") else None
    trial_space = TrialSpace(parsed, structured)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(40):
        trial = study.ask()
        values = trial_space.suggest(trial)
        overrides = [f"+sweeps={name}", *(f"{key}={override_value(value)}" for key, value in values.items())]
        rc = build_run_config(compose_config(overrides))  # raises on invalid input
        if rc.parallel.strategy == "pp":
            assert sum(rc.parallel.layers_per_stage) == rc.model.n_layers
            assert rc.run.grad_accum >= training_pipeline_stages(rc.parallel.degree)
        study.tell(trial, 0.0)


@pytest.mark.parametrize("n_layers,deepest", [(4, 4), (12, 8)])
def test_ipu_space_grid_matches_its_count_and_the_model(n_layers, deepest):
    task, sweeper = compose_sweep("ipu_deploy", [f"model.n_layers={n_layers}"])
    space = load_space(sweeper["space"]["hook"], task, sweeper["space"]["args"])
    assert isinstance(space, IpuPipelineSpace)
    grid = list(space.grid())
    assert len(grid) == space.size()
    assert all(sum(d["parallel.layers_per_stage"]) == n_layers for d in grid)
    assert len({repr(sorted(d.items())) for d in grid}) == len(grid)
    # IPU 0 may hold no layer, the others at least one: 4 layers fill at most 4 + 1 stages
    assert max(d["parallel.degree"] for d in grid) == deepest


def test_model_override_reaches_the_sweep():
    task, _ = compose_sweep("ipu_deploy", ["model=gpt2_medium"])
    assert task["model"]["name"] == "gpt2_medium" and task["model"]["n_layers"] == 24
    task, sweeper = compose_sweep("ipu_deploy")
    assert task["model"]["name"] == "gpt2_test" and task["hardware"]["mode"] == "predict"
    assert set(sweeper["params"]) == {"run.batch_size", "precision", "hardware.options.device_iterations"}
