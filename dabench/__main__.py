"""``python -m dabench [overrides] [-m]``: compose the configs under conf/ and run the job(s)."""

from pathlib import Path

import hydra
from omegaconf import DictConfig

#: the repository's conf/ folder (absolute, so the `dabench` console script finds it too)
CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")


@hydra.main(config_path=CONF_DIR, config_name="config", version_base=None)
def hydra_main(cfg: DictConfig) -> float:
    from dabench.app import run_job  # imported here: `--help` and bad command lines never load the pipeline

    return run_job(cfg)


def main() -> None:
    """Hydra's entry under :func:`dabench.interrupts.guard`: Ctrl-C or SIGTERM ends the process
    with one line and exit status 130 / 143, every open run closed (docs/reliability.md)."""
    from dabench.interrupts import guard
    from dabench.quiet import install

    install()  # third-party noise off unless -v / hydra.verbose (dabench/quiet.py); before torch and mlflow load
    with guard():
        hydra_main()


if __name__ == "__main__":
    import dabench.config  # noqa: F401  (registers the typed sections the schema knows)
    from dabench.quiet import install
    from dabench.schema import refuse_bad_command_line

    install()  # takes -v / --verbose off the command line before it is checked

    refuse_bad_command_line()  # unknown group options and keys: one line, exit 2, before Hydra
    main()
