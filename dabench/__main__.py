"""``python -m dabench [overrides] [-m]``: compose the configs under conf/ and run the job(s)."""

import hydra
from omegaconf import DictConfig

from dabench.app import run_job


@hydra.main(config_path="../conf", config_name="config", version_base=None)
def main(cfg: DictConfig) -> float:
    return run_job(cfg)


if __name__ == "__main__":
    main()
