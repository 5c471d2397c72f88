"""A new SQLite store seeded from the cached empty schema is the store MLflow itself would make."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from dabench.tracking import store
from dabench.tracking.store import client_and_experiment


def _schema(db: Path) -> tuple[list[list[str]], list[tuple]]:
    """Every table, index and trigger as its sorted lines (a rebuilt table's constraints come in
    any order, even between two stores MLflow made), and the schema version."""
    with sqlite3.connect(db) as con:
        sql = con.execute("select sql from sqlite_master where sql is not null").fetchall()
        version = con.execute("select version_num from alembic_version").fetchall()
    return sorted(sorted(line.strip().rstrip(",") for line in text.splitlines()) for (text,) in sql), version


def test_a_seeded_store_has_mlflows_schema_and_default_experiment(tmp_path, monkeypatch):
    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    made = tmp_path / "made" / "mlflow.db"
    made.parent.mkdir()
    MlflowClient(f"sqlite:///{made}").search_experiments()  # MLflow's own creation
    seeded = tmp_path / "seeded" / "mlflow.db"
    seeded.parent.mkdir()

    assert store.seed(seeded) is True
    assert store.template_path().is_file()
    assert _schema(seeded) == _schema(made)
    default = MlflowClient(f"sqlite:///{seeded}").get_experiment("0")
    assert default.name == "Default"
    assert default.artifact_location == str(tmp_path / "mlruns" / "0")  # where MLflow puts it from here
    assert store.seed(seeded) is False  # an existing store is never replaced


def test_dabench_records_into_a_seeded_store(tmp_path, monkeypatch):
    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path / "cache"))
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    client, experiment = client_and_experiment(uri, "dabench")
    run = client.create_run(experiment, run_name="seeded")
    client.log_metric(run.info.run_id, "throughput.samples_per_s", 1.5)
    client.set_terminated(run.info.run_id)
    assert store.template_path().is_file()
    again = MlflowClient(uri).get_run(run.info.run_id)
    assert again.data.metrics == {"throughput.samples_per_s": 1.5}
    location = MlflowClient(uri).get_experiment(experiment).artifact_location
    assert location == (tmp_path / "mlruns" / "artifacts").as_uri()


def test_a_damaged_template_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path / "cache"))
    path = store.template_path()
    path.parent.mkdir(parents=True)
    for damage in (b"not a database\n", b""):  # overwritten by hand, or cut to nothing
        path.write_bytes(damage)
        db = tmp_path / f"store{len(damage)}" / "mlflow.db"
        db.parent.mkdir()
        assert store.seed(db) is True
        assert path.read_bytes().startswith(b"SQLite format 3")
        assert MlflowClient(f"sqlite:///{db}").get_experiment("0").name == "Default"


def _store_at(tmp_path: Path, version: str) -> Path:
    """A dabench store whose schema version reads ``version``."""
    db = tmp_path / version / "mlflow.db"
    client_and_experiment(f"sqlite:///{db}", "dabench")
    with sqlite3.connect(db) as con:
        con.execute("update alembic_version set version_num = ?", (version,))
    return db


def _older_revision() -> str:
    from alembic.script import ScriptDirectory
    from mlflow.store.db.utils import _get_alembic_config, _get_latest_schema_revision

    script = ScriptDirectory.from_config(_get_alembic_config("sqlite://"))
    return script.get_revision(_get_latest_schema_revision()).down_revision


def test_a_store_of_another_mlflow_schema_is_refused_in_one_line_and_left_as_it_is(tmp_path, monkeypatch, run_cli):
    from dabench.pipeline.preflight import check_store
    from dabench.tracking.store import WrongStore, open_client, read_only

    monkeypatch.setenv("DABENCH_CACHE_DIR", str(tmp_path / "cache"))
    for version, says in ((_older_revision(), "older MLflow"), ("ffffffffffff", "newer MLflow")):
        db = _store_at(tmp_path, version)
        before = db.read_bytes()
        uri = f"sqlite:///{db}"
        for opening, args in ((client_and_experiment, (uri, "dabench")), (open_client, (uri,))):
            for reading in (True, False):
                with read_only(reading), pytest.raises(WrongStore, match=says):
                    opening(*args)
        (problem,) = check_store(uri, "tracking.uri", 3.0)
        assert says in problem.fix and (version in problem.fix)
        cli = (["hardware=ipu", f"tracking.uri={uri}"], ["report", "--tracking-uri", uri, "--out", "r"])
        for argv in cli if says == "newer MLflow" else ():  # (the same path for both)
            done = run_cli(*argv, code=2)
            assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
        assert db.read_bytes() == before


def test_a_study_storage_of_another_optuna_schema_is_refused_in_one_line_and_left_as_it_is(tmp_path, run_cli):
    import optuna

    from dabench.pipeline.preflight import check_study_storage

    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'made.db'}")
    optuna.create_study(study_name="s", storage=storage)
    storage.engine.dispose()
    older = storage.get_all_versions()[1]
    for version, says in ((older, "older Optuna"), ("v99.0.0.a", "newer Optuna")):
        db = tmp_path / f"{version}.db"
        db.write_bytes((tmp_path / "made.db").read_bytes())
        with sqlite3.connect(db) as con:
            con.execute("update alembic_version set version_num = ?", (version,))
        before, url = db.read_bytes(), f"sqlite:///{db}"
        (problem,) = check_study_storage(url)
        assert says in problem.fix and version in problem.fix
        cli = (["study", "--list", "--storage", url], ["+sweeps=ipu_deploy", f"hydra.sweeper.storage={url}", "-m"])
        for argv in cli if says == "older Optuna" else ():  # (the same path for both)
            done = run_cli(*argv, code=2)
            assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
        assert db.read_bytes() == before
