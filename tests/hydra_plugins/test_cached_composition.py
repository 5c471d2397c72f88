"""CachingConfigLoader (hydra_plugins/dabench_basic_sweeper/sweeper.py, over dabench.config.compose's
one composition cache) gives every job of a multirun the config Hydra's own ``load_sweep_config``
composes, hydra node included."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from dabench.pipeline.grid import expand

SWEEPS = [
    ["hardware=ipu", "parallel=pp"],
    ["hardware=wse2"],
    ["hardware=rdu"],
    ["model.n_layers=1,2", "run.batch_size=2,4"],
    # fallbacks mixed in: an added key, a deletion, a mapping value, an interpolation, a hydra key
    ["model=tiny", "run.batch_size=2,4", "+tracking.tags.x=1,2"],
    ["model=tiny", "run.batch_size=2,4", "~run.seed"],
    ["model=tiny", "run.batch_size=2,${run.seed}", "++tracking.tags={a:1},{b:2}"],
    ["model=tiny", "hydra.job.chdir=false", "model.n_layers=1,2,3"],
]


@pytest.fixture
def loader_and_master():
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    from dabench.config.paths import CONF_DIR

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None, job_name="dabench"):
        loader = GlobalHydra.instance().config_loader()

        def master(overrides):
            return loader.load_configuration("config", overrides=list(overrides), run_mode=RunMode.MULTIRUN)

        yield loader, master
    GlobalHydra.instance().clear()


def _container(cfg):
    return OmegaConf.to_container(cfg, resolve=False)


@pytest.mark.slow
@pytest.mark.parametrize("sweep", SWEEPS, ids=[" ".join(s) for s in SWEEPS])
def test_every_job_gets_hydras_config(loader_and_master, sweep):
    from hydra_plugins.dabench_basic_sweeper.sweeper import CachingConfigLoader

    loader, master_of = loader_and_master
    master = master_of(sweep)
    jobs = expand(sweep)
    assert len(jobs) > 1
    cached = CachingConfigLoader(loader)
    for job in jobs:
        fresh = loader.load_sweep_config(master, list(job))
        got = cached.load_sweep_config(master, list(job))
        assert _container(got) == _container(fresh), job
        assert OmegaConf.is_struct(got) == OmegaConf.is_struct(fresh)
        assert OmegaConf.is_readonly(got.hydra) == OmegaConf.is_readonly(fresh.hydra)
        assert OmegaConf.to_yaml(got.hydra.overrides) == OmegaConf.to_yaml(fresh.hydra.overrides)
        got.hydra.job.id = got.hydra.job.num = 7  # the launcher writes into what it gets: a copy is cached
    groups = {tuple(o for o in job if "." not in o.split("=", 1)[0]) for job in jobs}
    assert len(cached.composer._bases) <= len(groups) < len(jobs)  # Hydra composed each set of groups once
    plain = not any(line.startswith(("~", "++tracking.tags", "hydra.")) or "${" in line for line in sweep)
    if plain:  # the shortcut applied to every job
        assert cached.composer.full_compositions == 0
    else:
        assert cached.composer.full_compositions > 0


def test_a_bad_value_fails_as_hydra_fails(loader_and_master):
    """A value the composed config refuses (struct: unknown key) is Hydra's own error."""
    from hydra.errors import ConfigCompositionException

    from hydra_plugins.dabench_basic_sweeper.sweeper import CachingConfigLoader

    loader, master_of = loader_and_master
    master = master_of(["model=tiny"])
    cached = CachingConfigLoader(loader)
    cached.load_sweep_config(master, ["model=tiny", "model.n_layers=1"])
    with pytest.raises(ConfigCompositionException):
        cached.load_sweep_config(master, ["model=tiny", "model.no_such_key=1"])
