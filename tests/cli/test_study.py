"""python -m dabench study: the best deployment as a command line; study files and plots."""

import shlex

import optuna
from optuna.trial import TrialState

from dabench.cli.study import main
from dabench.tracking.redact import redact_uri
from dabench.tune.best import summarize
from dabench.tune.parent_run import write_study_files
from dabench.tune.study import MODE_ATTR, OVERRIDES_ATTR, REASON_ATTR, STATUS_ATTR

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _make_study(storage: str, name: str = "ipu_deploy-gpt2_test") -> optuna.Study:
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize")
    rows = [(1, "fp16", 120.0), (2, "fp16", 230.0), (4, "fp32", None), (2, "mixed", 210.0)]
    for batch, precision, value in rows:
        study.enqueue_trial({"run.batch_size": batch, "precision": precision})
        trial = study.ask()
        trial.suggest_categorical("run.batch_size", [1, 2, 4])
        trial.suggest_categorical("precision", ["fp16", "fp32", "mixed"])
        trial.set_user_attr(
            OVERRIDES_ATTR,
            [
                "+sweeps=ipu_deploy",
                f"run.batch_size={batch}",
                f"precision={precision}",
                "parallel.layers_per_stage=[0,4,4,4]",
                "hardware.mode=predict",
            ],
        )
        trial.set_user_attr(MODE_ATTR, "predict")
        if value is None:
            trial.set_user_attr(STATUS_ATTR, "capacity")
            trial.set_user_attr(REASON_ATTR, "sram capacity exceeded on IPU 1")
            study.tell(trial, state=TrialState.FAIL)
        else:
            trial.set_user_attr(STATUS_ATTR, "ok")
            study.tell(trial, value)
    return study


def test_best_command_is_ready_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlruns").mkdir()
    _make_study(f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}")
    assert main(["--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "best: trial 1, 230.00 samples/s PREDICTED" in out
    commands = [line.strip() for line in out.splitlines() if line.strip().startswith("python -m dabench ")]
    run_again, measure = commands[0], commands[1]
    assert shlex.split(run_again)[3:] == [
        "+sweeps=ipu_deploy",
        "run.batch_size=2",
        "precision=fp16",
        "parallel.layers_per_stage=[0,4,4,4]",
        "hardware.mode=predict",
    ]
    assert shlex.split(measure)[-1] == "hardware.mode=measure" and "hardware.mode=predict" not in measure
    assert "capacity: sram capacity exceeded on IPU 1" in out


def test_cli_errors_name_what_is_valid(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([]) == 2
    assert "no Optuna study storage" in capsys.readouterr().err
    storage = f"sqlite:///{tmp_path / 'o.db'}"
    _make_study(storage, "a")
    _make_study(storage, "b")
    assert main(["--storage", storage]) == 2
    assert "studies in" in capsys.readouterr().err
    assert main(["--storage", storage, "--study", "c"]) == 2
    assert "must be one of a, b" in capsys.readouterr().err
    assert main(["--storage", storage, "--list"]) == 0
    assert "a: 4 trials, best 230.00 (trial 1)" in capsys.readouterr().out


def test_study_files_and_summary(tmp_path):
    study = _make_study(f"sqlite:///{tmp_path / 'o.db'}")
    summary = summarize(study)
    assert summary.states == {"complete": 3, "fail": 1}
    assert summary.statuses == {"ok": 3, "capacity": 1}
    assert summary.best.params == {"run.batch_size": 2, "precision": "fp16"}
    notes = write_study_files(study, summary, tmp_path / "out")
    for name in ("optimization_results.yaml", "trials.csv", "optimization_history.png", "param_importance.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert "3 completed trials" in notes[0]


def test_importance_is_skipped_with_a_note_when_too_few_trials(tmp_path):
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"x": 1})
    study.optimize(lambda t: t.suggest_int("x", 0, 3), n_trials=1)
    notes = write_study_files(study, summarize(study), tmp_path)
    assert "skipped: 1 completed trial(s)" in notes[0]
    assert not (tmp_path / "param_importance.png").exists()


def test_passwords_are_hidden():
    assert (
        redact_uri("postgresql://user:secret@db.example:5432/optuna") == "postgresql://user:***@db.example:5432/optuna"
    )
    assert redact_uri("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"
