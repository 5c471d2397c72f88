"""What Hydra refuses (a user's sweep file it cannot compose or that names what does not exist, a
flag it does not know, a config folder that is not there) is refused before any work: exit 2 and
one line ``dabench: invalid config: ...`` naming the field and what is valid, never Hydra's
multi-line report, its usage text or a traceback, and no run folder or store left behind.
Hypothesis draws the damage (a class of mistakes, each with generated names and values) done to a
sweep file that runs as written."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dabench.tune.settings import StructuredSpaceSettings, SweepSettings
from tests.conftest import run_dabench

HEADER = "# @package _global_\n"
BODY = """\
defaults:
  - override /hydra/sweeper: dabench_optuna
  - override /hardware: ipu
hardware:
  mode: predict
run:
  plots: never
hydra:
  sweeper:
    n_trials: 1
    params:
      run.batch_size: choice(1, 2)
"""
NAMES = st.from_regex(r"[a-z][a-z_]{1,10}[a-z]", fullmatch=True)


def _unknown(taken: set[str]) -> st.SearchStrategy[str]:
    return NAMES.filter(lambda name: name not in taken)


def _sweeper_line(line: str) -> str:
    return BODY.replace("    n_trials: 1\n", f"    n_trials: 1\n    {line}\n")


#: kind of damage -> strategy of (sweep file text, a text the refusal's line contains)
DAMAGE = {
    "no package line": st.just((BODY, "@package _global_")),
    "unknown sweeper key": _unknown(set(SweepSettings.__dataclass_fields__)).map(
        lambda key: (HEADER + _sweeper_line(f"{key}: 1"), f"hydra.sweeper.{key}")
    ),
    "unknown space key": _unknown(set(StructuredSpaceSettings.__dataclass_fields__)).map(
        lambda key: (HEADER + _sweeper_line(f"space:\n      {key}: 1"), f"hydra.sweeper.space.{key}")
    ),
    "sweeper value of the wrong type": st.tuples(
        st.sampled_from(["seed", "failed_as_infeasible", "allow_space_change"]), NAMES
    ).map(lambda kv: (HEADER + _sweeper_line(f"{kv[0]}: {kv[1]}x"), f"hydra.sweeper.{kv[0]}")),
    "unknown option in defaults": st.tuples(
        st.sampled_from(["hardware", "model", "precision", "parallel", "hydra/sweeper", "hydra/launcher"]), NAMES
    ).map(
        lambda go: (
            HEADER + BODY.replace("defaults:\n", f"defaults:\n  - override /{go[0]}: {go[1]}x\n", 1),
            f"{go[0]}={go[1]}x: no such option; valid: ",
        )
    ),
    "broken interpolation": st.tuples(st.sampled_from(["batch_size", "warmup_steps", "seed"]), NAMES).map(
        lambda kn: (HEADER + BODY.replace("  plots: never\n", f"  plots: never\n  {kn[0]}: ${{{kn[1]}.x}}\n"), kn[1])
    ),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.sampled_from(sorted(DAMAGE)).flatmap(lambda kind: DAMAGE[kind]))
def test_a_broken_sweep_file_is_one_line_and_exit_2(tmp_path_factory, damage):
    text, named = damage
    folder = tmp_path_factory.mktemp("sweep")
    (folder / "sweeps").mkdir()
    (folder / "sweeps" / "mine.yaml").write_text(text)
    done = run_dabench("+sweeps=mine", "-m", cwd=folder, code=2)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("dabench: invalid config: "), done.stderr[-3000:]
    assert named in lines[0], lines[0]
    assert sorted(p.name for p in folder.iterdir()) == ["sweeps"], "work began before the refusal"


def test_the_base_sweep_runs_as_written(tmp_path):
    """The damage above is all that makes the file fail."""
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "mine.yaml").write_text(HEADER + BODY)
    done = run_dabench("+sweeps=mine", "-m", cwd=tmp_path)
    assert "1 trials" in done.stdout, done.stdout[-2000:]


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--config-dir", "/nonexistent-dabench"], "/nonexistent-dabench"),
        (["--config-name", "nosuch"], "--config-name=nosuch"),
        (["hydra.run.dir=${nosuch}"], "hydra.run.dir"),
        (["hydra.job.chdir=maybe"], "hydra.job.chdir=maybe"),
        (["-m", "hydra/launcher=nosuch"], "hydra/launcher=nosuch: no such option; valid: basic, "),
        (["--nosuch"], "unrecognized arguments: --nosuch"),
        (["--cfg", "nosuch"], "argument --cfg/-c: invalid choice: 'nosuch'"),
        (["--config-dir"], "argument --config-dir/-cd: expected one argument"),
        (["-sc", "install=bash"], "--shell-completion: not offered"),
    ],
)
def test_what_hydra_refuses_on_the_command_line_is_one_line(tmp_path, argv, named):
    done = run_dabench("hardware.mode=predict", *argv, cwd=tmp_path, code=2)
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert line.startswith("dabench: invalid config: ") and named in line, line
    assert not any(tmp_path.iterdir()), "work began before the refusal"


def test_hydra_full_error_brings_hydras_traceback_back(tmp_path):
    done = run_dabench("--config-dir", "/nonexistent-dabench", cwd=tmp_path, env={"HYDRA_FULL_ERROR": "1"}, code=1)
    assert "Traceback" in done.stderr and "SearchPathException" in done.stderr, done.stderr[-2000:]


def test_an_override_after_the_multirun_flag_joins_the_sweep(tmp_path):
    """Hydra's parser takes no override after a flag that follows one (``a=1 -m b=2``); dabench does."""
    done = run_dabench("hardware.mode=predict", "-m", "run.batch_size=1,2", "tracking.enabled=false", cwd=tmp_path)
    assert "multirun: 2/2 runs done (2 ok, 0 failed)" in done.stderr, done.stderr[-2000:]


def test_a_multirun_item_with_a_broken_interpolation_is_its_own_invalid_config(tmp_path):
    """The sweep goes on; its parent run keeps the overrides as typed and counts every job."""
    import sqlite3

    done = run_dabench("hardware.mode=predict", "run.batch_size=${nosuch},2", "-m", cwd=tmp_path)
    assert "UserWarning" not in done.stderr and "2 runs (1 ok, 1 invalid_config)" in done.stdout + done.stderr
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        (parent,) = db.execute("select value from params where key = 'multirun.overrides'").fetchall()
        counts = dict(db.execute("select key, value from metrics where key like 'jobs.%'").fetchall())
    assert parent == ("hardware.mode=predict run.batch_size=${nosuch},2",)
    assert counts["jobs.total"] == 2 and counts["jobs.invalid_config"] == 1
