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


def _one_repository_for_help() -> None:
    """``--help`` lists every config group through Hydra's
    ``ConfigLoaderImpl.get_group_options``, which builds a fresh config repository (a deep copy of
    the ConfigStore) on each of its ~90 calls: ~0.5 s of a 1 s help page. For a help page that
    call, with no config name and no overrides (the only way the help calls it), reuses one
    repository: the same search path gives the same answers (tests/test_help_listing.py compares
    the pages). Runs never take this path."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.object_type import ObjectType

    original = ConfigLoaderImpl.get_group_options
    repositories: dict[int, object] = {}

    def get_group_options(self, group_name, results_filter=ObjectType.CONFIG, config_name=None, overrides=None):
        if config_name is not None or overrides:
            return original(self, group_name, results_filter, config_name, overrides)
        repo = repositories.get(id(self))
        if repo is None:
            repo = repositories[id(self)] = self._parse_overrides_and_create_caching_repo(None, [])[1]
        return repo.get_group_options(group_name, results_filter)

    ConfigLoaderImpl.get_group_options = get_group_options


def main() -> None:
    """Hydra's entry under :func:`dabench.interrupts.guard`: Ctrl-C or SIGTERM ends the process
    with one line and exit status 130 / 143, every open run closed (docs/reliability.md)."""
    from dabench.interrupts import guard
    from dabench.quiet import install

    install()  # third-party noise off unless -v / hydra.verbose (dabench/quiet.py); before torch and mlflow load;
    # it also takes -v / --verbose off the command line before the command line is checked
    import sys

    import dabench.config  # noqa: F401  (registers the typed sections the schema knows)
    from dabench.schema import refuse_bad_command_line

    # unknown group options and keys: one line, exit 2, before Hydra (`python -m dabench` and the
    # `dabench` console script alike)
    refuse_bad_command_line()
    if "--help" in sys.argv or "-h" in sys.argv:  # (--hydra-help stays Hydra's own)
        _one_repository_for_help()
    with guard():
        hydra_main()


if __name__ == "__main__":
    main()
